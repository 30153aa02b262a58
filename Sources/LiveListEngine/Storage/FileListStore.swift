import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
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
///     DIR/ended-sign-ins         one line "DIGEST ISSUED EXPIRES" per sign-out, appended, kept until
///                                each cookie expires (FileListStore+SignIns.swift)
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
    /// The ended sign-ins file, once read (see FileListStore+SignIns.swift).
    let signIns = Mutex<SignInLog?>(nil)

    static let marker = "livelist-data"
    static let lockFile = "lock"
    static let markerContent = Array("LiveList data directory, format 1\n".utf8)
    static let temporarySuffix = ".livelist-tmp"
    /// Numbers the temporary files of this process.
    static let temporaryCounter = Atomic<Int>(0)

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

    public func load() throws(StoreError) -> StoredLists {
        var stored = StoredLists()
        for entry in try Self.list(directory) {
            let path = directory + "/" + entry
            switch entry {
            case Self.marker, Self.lockFile, "lists", "apps", "secret":
                continue
            case Self.signInsFile:
                try signIns.withLock { (log: inout SignInLog?) throws(StoreError) in
                    log = try readSignIns(now: EndedSignIn.secondsNow())
                }
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
}
