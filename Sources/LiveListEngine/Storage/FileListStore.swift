import Synchronization
#if canImport(Glibc)
import Glibc
private let systemRead = Glibc.read
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
import Darwin
private let systemRead = Darwin.read
private let systemWrite = Darwin.write
#endif

/// A ``ListStore`` in a directory (`--data`), with atomic, fsynced writes, used by one process at a time.
///
/// Layout:
///
///     DIR/livelist-data          marker: this directory belongs to LiveList (format 1)
///     DIR/lock                   held with an exclusive flock(2) while a process uses DIR; holds its pid
///     DIR/versions               one "NAME VERSION" line per list: high-water marks of app lists
///     DIR/lists/NAME.list        "livelist-list 1 VERSION\n" then the exact PUT body, or, once the list
///                                is deleted, the tombstone "livelist-deleted 1 VERSION\n"
///     DIR/lists/NAME.log         the patches after NAME.list's version, appended one record each:
///                                "livelist-patch 1 VERSION LENGTH CHECKSUM\n", the patch, "\n"
///     DIR/apps/NAME.state        "livelist-state 1 VERSION\n" then a Swift app's state, opaque (a file
///                                without that header, from an earlier release, is a state at version 0)
///     DIR/secret                 32 random bytes for session tokens (mode 0600)
///
/// A patch (`PATCH`, or a PUT that changes only contents) is appended to the list's log and fsynced,
/// so its cost follows the patch, not the list. A patch that would make the log hold more bytes than the
/// body it follows compacts the list instead: the whole state is written as NAME.list (as below) at the
/// patch's version, then the log is removed. At start-up a list is its body with the log's patches after
/// its version applied; a record torn by a crash (short, or failing its checksum, at the log's end) was never
/// acknowledged and is cut off; a bad record before the end stops start-up, as any corrupt file does.
///
/// Every file is written to a temporary file of its own beside it (`NAME.PID.N.livelist-tmp`, so that no
/// two writes ever share one), fsynced, renamed over the old one and the directory fsynced, so a crash
/// leaves either the old or the new file; start-up removes leftover temporary files. A directory holding
/// anything else, or a file that does not parse, stops start-up with a message naming it: LiveList never
/// overwrites what it does not understand. A second process opening the same directory is refused: the
/// lock is the kernel's, so it is released when the process ends, however it ends.
public final class FileListStore: ListStore, Sendable {
    /// The directory.
    public let directory: String
    /// Each name's stored high-water mark, as in the `versions` file.
    private let highWater = Mutex<[String: Int]>([:])
    /// The bytes of each list's log and of the body it follows, for compaction.
    private let logSizes = Mutex<[String: LogSize]>([:])
    /// The open lock file; closing it releases the directory (-1 once closed).
    private let lockDescriptor: Mutex<Int32>

    static let marker = "livelist-data"
    static let lockFile = "lock"
    static let markerContent = Array("LiveList data directory, format 1\n".utf8)
    static let temporarySuffix = ".livelist-tmp"
    /// Numbers the temporary files of this process.
    private static let temporaryCounter = Atomic<Int>(0)

    /// Opens (creating when missing or empty) the data directory and takes its lock.
    ///
    /// - Throws: ``StoreError`` when the directory cannot be created or written, holds files that are
    ///   not LiveList's, or is in use by another process.
    public init(directory: String) throws(StoreError) {
        self.directory = directory
        try Self.makeDirectory(directory)
        let descriptor = try Self.takeLock(directory)
        lockDescriptor = Mutex(descriptor)
        do throws(StoreError) {
            let entries = try Self.list(directory).filter { $0 != Self.lockFile }
            if entries.contains(Self.marker) {
                let content = try Self.read(directory + "/" + Self.marker)
                guard content == Self.markerContent else {
                    throw StoreError("\(directory)/\(Self.marker) is not a LiveList marker of format 1; refusing to use \(directory)")
                }
            } else {
                let foreign = entries.filter { !$0.hasSuffix(Self.temporarySuffix) }
                guard foreign.isEmpty else {
                    throw StoreError("\(directory) holds files that are not LiveList's (\(foreign.sorted().prefix(3).joined(separator: ", "))); choose an empty or LiveList data directory with --data")
                }
                try Self.writeAtomically(Self.markerContent, to: directory + "/" + Self.marker)
            }
            try Self.makeDirectory(directory + "/lists")
            try Self.makeDirectory(directory + "/apps")
        } catch {
            close(descriptor)
            throw error
        }
    }

    deinit {
        unlock()
    }

    /// Releases the directory for another process (or another store in this one), at once rather than
    /// when the last reference goes. Call it only once nothing writes through this store any more.
    public func unlock() {
        let descriptor = lockDescriptor.withLock { descriptor -> Int32 in
            defer { descriptor = -1 }
            return descriptor
        }
        if descriptor >= 0 {
            close(descriptor)
        }
    }

    /// Opens `DIR/lock` and takes an exclusive, non-blocking flock on it, writing this process's pid.
    ///
    /// A lock that names this very process was released a moment ago (an in-process restart after
    /// `unlock()`) but may still be held for an instant by a child this process is spawning, which
    /// shares the descriptor between its fork and its exec (close-on-exec ends that): it is asked
    /// again for up to a second before the directory counts as in use.
    private static func takeLock(_ directory: String) throws(StoreError) -> Int32 {
        let path = directory + "/" + lockFile
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw StoreError("cannot open \(path): \(errorText())")
        }
        let ownPID = String(getpid())
        var attempts = 0
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let busy = errno == EWOULDBLOCK
            let message = errorText()
            let holder = (try? read(path)).map { String(decoding: $0, as: UTF8.self).filter(\.isNumber) } ?? ""
            if busy && holder == ownPID && attempts < 100 {
                attempts += 1
                usleep(10_000)
                continue
            }
            close(descriptor)
            if busy {
                let who = holder.isEmpty ? "another livelist process" : "another livelist process (pid \(holder))"
                throw StoreError("\(directory) is in use by \(who); stop it, or give this one its own --data")
            }
            throw StoreError("cannot lock \(path): \(message)")
        }
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(descriptor, 0) == 0 {
            _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        }
        return descriptor
    }

    public func load() throws(StoreError) -> StoredLists {
        var stored = StoredLists()
        for entry in try Self.list(directory) {
            let path = directory + "/" + entry
            switch entry {
            case Self.marker, Self.lockFile, "lists", "apps", "secret":
                continue
            case "versions":
                stored.highWater = try Self.parseVersions(try Self.read(path), path: path)
            default:
                if entry.hasSuffix(Self.temporarySuffix) {
                    unlink(path)
                    continue
                }
                throw StoreError("\(path) is not LiveList's; move it out of the data directory")
            }
        }
        let listFolder = directory + "/lists"
        let files = try Self.storedFiles(in: listFolder, suffix: ".list", kind: "list file", alsoAllowing: Self.logSuffix)
        let listed = Set(files.map(\.name.rawValue))
        var sizes: [String: LogSize] = [:]
        for (name, path) in files {
            let version: Int
            let logPath = listFolder + "/" + name.rawValue + Self.logSuffix
            switch try Self.parseList(try Self.read(path), path: path) {
            case let .list(list):
                let (withPatches, logBytes) = try Self.applyLog(at: logPath, to: list)
                stored.jsonLists[name.rawValue] = withPatches
                sizes[name.rawValue] = LogSize(log: logBytes, body: list.body.count)
                version = withPatches.version
            case let .deleted(deletedAt):
                unlink(logPath)
                version = deletedAt
            }
            stored.highWater[name.rawValue] = max(stored.highWater[name.rawValue] ?? 0, version)
        }
        for entry in try Self.list(listFolder) where entry.hasSuffix(Self.logSuffix) && !listed.contains(String(entry.dropLast(Self.logSuffix.count))) {
            throw StoreError("\(listFolder)/\(entry) is a log of patches without its list file; the data directory is corrupt")
        }
        logSizes.withLock { $0 = sizes }
        for (name, path) in try Self.storedFiles(in: directory + "/apps", suffix: ".state", kind: "app state") {
            let state = try Self.parseAppState(try Self.read(path), path: path)
            stored.appStates[name.rawValue] = state
            stored.highWater[name.rawValue] = max(stored.highWater[name.rawValue] ?? 0, state.version)
        }
        for (name, version) in stored.highWater where version > ListVersion.maximum {
            throw StoreError("\(directory): list \(name) is at version \(version), beyond the largest version \(ListVersion.maximum); the data directory is corrupt")
        }
        highWater.withLock { $0 = stored.highWater }
        return stored
    }

    /// The files `NAME.SUFFIX` of `folder`, with their list names: the temporary files of a write that
    /// was interrupted are removed, and anything else refuses the folder (a `kind` of LiveList's only).
    private static func storedFiles(in folder: String, suffix: String, kind: String, alsoAllowing other: String? = nil) throws(StoreError) -> [(name: ListName, path: String)] {
        var files: [(name: ListName, path: String)] = []
        for entry in try list(folder) {
            let path = folder + "/" + entry
            if entry.hasSuffix(temporarySuffix) {
                unlink(path)
                continue
            }
            if let other, entry.hasSuffix(other), ListName(String(entry.dropLast(other.count))) != nil {
                continue
            }
            guard entry.hasSuffix(suffix), let name = ListName(String(entry.dropLast(suffix.count))) else {
                throw StoreError("\(path) is not a LiveList \(kind); move it out of the data directory")
            }
            files.append((name, path))
        }
        return files
    }

    public func saveHighWater(_ version: Int, for name: String) throws(StoreError) {
        try highWater.withLock { (highWater: inout [String: Int]) throws(StoreError) in
            guard version > (highWater[name] ?? 0) else { return }
            var next = highWater
            next[name] = version
            let text = next.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)\n" }.joined()
            try Self.writeAtomically(Array(text.utf8), to: directory + "/versions")
            highWater = next
        }
    }

    public func saveJSONList(name: String, version: Int, body: [UInt8]) throws(StoreError) {
        let header = Array("livelist-list 1 \(version)\n".utf8)
        try Self.writeAtomically(header + body, to: directory + "/lists/\(name).list")
        try dropLog(of: name, leaving: LogSize(log: 0, body: body.count))
    }

    public func deleteJSONList(name: String, version: Int) throws(StoreError) {
        try Self.writeAtomically(Array("livelist-deleted 1 \(version)\n".utf8), to: directory + "/lists/\(name).list")
        try dropLog(of: name, leaving: nil)
    }

    /// Appends the patch to the list's log and fsyncs it (and the folder, for a new log); compacts the
    /// list once the log holds more bytes than the body it follows. A compaction that fails leaves the
    /// log as it is (the patch is durable either way) and is tried again after the next patch.
    public func appendJSONPatch(name: String, version: Int, patch: [UInt8], idempotency: IdempotentWrite?, body: () -> [UInt8]) throws(StoreError) {
        let path = directory + "/lists/\(name)" + Self.logSuffix
        let size = logSizes.withLock { $0[name] } ?? LogSize(log: 0, body: 0)
        let record = Self.logRecord(version: version, patch: patch)
        let grown = LogSize(log: size.log + record.count, body: size.body)
        if grown.log > grown.body {
            // The record would make the log outgrow its body: the body is written whole at this
            // version instead, what a compaction right after the append would write (a small list's
            // patches cost one atomic write, not an append, a compaction and the log's removal).
            try saveJSONList(name: name, version: version, body: body())
            return
        }
        // A log the store counts as empty holds nothing needed (at most records a compaction left).
        try Self.append(record, to: path, truncating: size.log == 0)
        if size.log == 0 {
            try Self.syncDirectory(directory + "/lists")
        }
        logSizes.withLock { $0[name] = grown }
    }

    /// Removes a list's log once its list file no longer needs it (written whole, or deleted), and
    /// records what is left.
    private func dropLog(of name: String, leaving size: LogSize?) throws(StoreError) {
        let had = logSizes.withLock { sizes -> Bool in
            defer { sizes[name] = size }
            return (sizes[name]?.log ?? 0) > 0
        }
        guard had else { return }
        let path = directory + "/lists/\(name)" + Self.logSuffix
        if unlink(path) == 0 {
            try Self.syncDirectory(directory + "/lists")
        }
    }

    public func saveAppState(name: String, version: Int, bytes: [UInt8]) throws(StoreError) {
        try Self.writeAtomically(Array("livelist-state 1 \(version)\n".utf8) + bytes, to: directory + "/apps/\(name).state")
    }

    public func appState(name: String) throws(StoreError) -> StoredLists.AppState? {
        let path = directory + "/apps/\(name).state"
        guard access(path, F_OK) == 0 else { return nil }
        return try Self.parseAppState(try Self.read(path), path: path)
    }

    public func secret() throws(StoreError) -> [UInt8] {
        let path = directory + "/secret"
        if access(path, F_OK) == 0 {
            let bytes = try Self.read(path)
            guard bytes.count == 32 else {
                throw StoreError("\(path) does not hold 32 bytes; the file is corrupt")
            }
            return bytes
        }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0 ..< 32).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
        try Self.writeAtomically(bytes, to: path, mode: 0o600)
        return bytes
    }

    // MARK: - Parsing

    static func parseVersions(_ bytes: [UInt8], path: String) throws(StoreError) -> [String: Int] {
        var result: [String: Int] = [:]
        for (number, line) in bytes.split(separator: 0x0A).enumerated() {
            let fields = line.split(separator: 0x20)
            guard fields.count == 2, let name = ListName(String(decoding: fields[0], as: UTF8.self)),
                let version = ListVersion.parse(String(decoding: fields[1], as: UTF8.self))
            else {
                throw StoreError("\(path):\(number + 1) is not \"NAME VERSION\"; the file is corrupt")
            }
            result[name.rawValue] = version
        }
        return result
    }

    /// What a list file holds: a live list, or the tombstone of a deleted one.
    enum ListFile: Equatable {
        case list(StoredLists.JSONList)
        case deleted(version: Int)
    }

    static func parseList(_ bytes: [UInt8], path: String) throws(StoreError) -> ListFile {
        guard let newline = bytes.firstIndex(of: 0x0A) else {
            throw StoreError("\(path) has no header line; the file is corrupt")
        }
        let fields = bytes[..<newline].split(separator: 0x20).map { String(decoding: $0, as: UTF8.self) }
        guard fields.count == 3, fields[0] == "livelist-list" || fields[0] == "livelist-deleted", fields[1] == "1",
            let version = ListVersion.parse(fields[2]), version > 0
        else {
            throw StoreError("\(path) does not start with \"livelist-list 1 VERSION\" or \"livelist-deleted 1 VERSION\"; the file is corrupt")
        }
        if fields[0] == "livelist-deleted" {
            guard newline + 1 == bytes.count else {
                throw StoreError("\(path) is a tombstone with content after its header; the file is corrupt")
            }
            return .deleted(version: version)
        }
        return .list(.init(version: version, body: Array(bytes[(newline + 1)...])))
    }

    static func parseAppState(_ bytes: [UInt8], path: String) throws(StoreError) -> StoredLists.AppState {
        let prefix = Array("livelist-state 1 ".utf8)
        guard bytes.starts(with: prefix) else {
            // Saved by an earlier release, without a header: the state as it is.
            return .init(version: 0, bytes: bytes)
        }
        guard let newline = bytes.firstIndex(of: 0x0A),
            let version = ListVersion.parse(String(decoding: bytes[prefix.count ..< newline], as: UTF8.self))
        else {
            throw StoreError("\(path) does not start with \"livelist-state 1 VERSION\"; the file is corrupt")
        }
        return .init(version: version, bytes: Array(bytes[(newline + 1)...]))
    }

    // MARK: - Logs of patches

    static let logSuffix = ".log"

    /// The bytes of a list's log and of the body it follows.
    struct LogSize {
        var log: Int
        var body: Int
    }

    /// One record of a log: a header line with the version, the patch's length and its checksum, the
    /// patch, and a newline.
    static func logRecord(version: Int, patch: [UInt8]) -> [UInt8] {
        var record = Array("livelist-patch 1 \(version) \(patch.count) \(String(checksum(patch), radix: 16))\n".utf8)
        record += patch
        record.append(0x0A)
        return record
    }

    /// FNV-1a, 64 bits: enough to tell a record a crash tore or left unwritten from a whole one.
    static func checksum(_ bytes: some Collection<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// The records of a log after `after`, in order, and the length of the log up to its last whole
    /// record: a record that ends the log short, or with a wrong checksum, was torn by a crash before
    /// it was acknowledged, and is left out. Versions must follow each other.
    static func parseLog(_ bytes: [UInt8], after: Int, path: String) throws(StoreError) -> (patches: [(version: Int, patch: ArraySlice<UInt8>)], length: Int) {
        var patches: [(version: Int, patch: ArraySlice<UInt8>)] = []
        var offset = 0
        var expected = after + 1
        while offset < bytes.count {
            guard let newline = bytes[offset...].firstIndex(of: 0x0A) else { break }
            let fields = bytes[offset ..< newline].split(separator: 0x20).map { String(decoding: $0, as: UTF8.self) }
            guard fields.count == 5, fields[0] == "livelist-patch", fields[1] == "1", let version = ListVersion.parse(fields[2]),
                let length = Int(fields[3]), length >= 0, let sum = UInt64(fields[4], radix: 16)
            else {
                // Zeros where a crash left the file longer than what was written are a torn end too.
                if bytes[offset...].allSatisfy({ $0 == 0 }) { break }
                throw StoreError("\(path): the record at byte \(offset) has no \"livelist-patch 1 VERSION LENGTH CHECKSUM\" header; the file is corrupt")
            }
            let start = newline + 1
            guard bytes.count - start >= length + 1 else { break }
            let patch = bytes[start ..< start + length]
            let end = start + length + 1
            guard bytes[start + length] == 0x0A, checksum(patch) == sum else {
                if end == bytes.count || bytes[end...].allSatisfy({ $0 == 0 }) { break }
                throw StoreError("\(path): the record at byte \(offset) fails its checksum; the file is corrupt")
            }
            if version > after {
                guard version == expected else {
                    throw StoreError("\(path): the record at byte \(offset) is version \(version), expected \(expected); the file is corrupt")
                }
                patches.append((version, patch))
                expected += 1
            }
            offset = end
        }
        return (patches, offset)
    }

    /// `list` with the patches of its log applied (the log cut after its last whole record), and the
    /// log's length.
    static func applyLog(at path: String, to list: StoredLists.JSONList) throws(StoreError) -> (StoredLists.JSONList, Int) {
        guard access(path, F_OK) == 0 else { return (list, 0) }
        let bytes = try read(path)
        let (records, length) = try parseLog(bytes, after: list.version, path: path)
        if length < bytes.count {
            guard truncate(path, off_t(length)) == 0 else {
                throw StoreError("cannot cut the torn end off \(path): \(errorText())")
            }
        }
        return (try list.applying(records.map { Array($0.patch) }, what: path), length)
    }

    /// Appends `record` to the file at `path` (made when missing, emptied first with `truncating`) and
    /// fsyncs it; a failed append is cut off again, so that the next one follows a whole record.
    static func append(_ record: [UInt8], to path: String, truncating: Bool) throws(StoreError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncating ? O_TRUNC : 0), 0o644)
        guard descriptor >= 0 else {
            throw StoreError("cannot open \(path): \(errorText())")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw StoreError("cannot read the size of \(path): \(errorText())")
        }
        do {
            try writeAndSync(record, to: descriptor, path: path)
        } catch {
            _ = ftruncate(descriptor, info.st_size)
            throw error
        }
    }

    /// Writes all of `bytes` to `descriptor` (again after an interruption), then fsyncs it.
    private static func writeAndSync(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(StoreError) {
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { raw in systemWrite(descriptor, raw.baseAddress! + written, raw.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StoreError("cannot write \(path): \(errorText())")
            }
            written += count
        }
        guard fsync(descriptor) == 0 else {
            throw StoreError("cannot sync \(path): \(errorText())")
        }
    }

    // MARK: - Files

    static func errorText() -> String {
        String(cString: strerror(errno))
    }

    static func makeDirectory(_ path: String) throws(StoreError) {
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw StoreError("cannot create \(path): \(errorText())")
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw StoreError("\(path) is not a directory")
        }
    }

    static func list(_ path: String) throws(StoreError) -> [String] {
        guard let handle = opendir(path) else {
            throw StoreError("cannot read \(path): \(errorText())")
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." {
                names.append(name)
            }
        }
        return names
    }

    package static func read(_ path: String) throws(StoreError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw StoreError("cannot open \(path): \(errorText())")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StoreError("cannot read \(path): \(errorText())")
            }
            if count == 0 { break }
            bytes.append(contentsOf: buffer[0 ..< count])
        }
        return bytes
    }

    /// Writes `bytes` to a temporary file beside `path`, fsyncs it, renames it over `path` and fsyncs
    /// the directory.
    static func writeAtomically(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws(StoreError) {
        let number = temporaryCounter.wrappingAdd(1, ordering: .relaxed).oldValue
        let temporary = "\(path).\(getpid()).\(number)\(temporarySuffix)"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw StoreError("cannot write \(temporary): \(errorText())")
        }
        do {
            try writeAndSync(bytes, to: descriptor, path: temporary)
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        close(descriptor)
        guard rename(temporary, path) == 0 else {
            let message = errorText()
            unlink(temporary)
            throw StoreError("cannot replace \(path): \(message)")
        }
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        try syncDirectory(directory.isEmpty ? "." : directory)
    }

    static func syncDirectory(_ path: String) throws(StoreError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw StoreError("cannot open \(path): \(errorText())")
        }
        defer { close(descriptor) }
        if fsync(descriptor) != 0 {
            throw StoreError("cannot sync \(path): \(errorText())")
        }
    }
}
