#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A ``ListStore`` in a directory (`--data`), with atomic, fsynced writes.
///
/// Layout:
///
///     DIR/livelist-data          marker: this directory belongs to LiveList (format 1)
///     DIR/versions               one "NAME VERSION" line per list: high-water marks
///     DIR/lists/NAME.list        "livelist-list 1 VERSION\n" then the exact PUT body
///     DIR/apps/NAME.state        a Swift app's state, opaque
///     DIR/secret                 32 random bytes for session tokens (mode 0600)
///
/// Every file is written to `NAME.livelist-tmp` in the same directory, fsynced, renamed over the old
/// one and the directory fsynced, so a crash leaves either the old or the new file; start-up removes
/// leftover temporary files. A directory holding anything else, or a file that does not parse, stops
/// start-up with a message naming it: LiveList never overwrites what it does not understand.
public final class FileListStore: ListStore, @unchecked Sendable {
    /// The directory.
    public let directory: String
    private let lock = Lock()
    private var highWater: [String: Int] = [:]

    static let marker = "livelist-data"
    static let markerContent = Array("LiveList data directory, format 1\n".utf8)
    static let temporarySuffix = ".livelist-tmp"

    /// Opens (creating when missing or empty) the data directory.
    ///
    /// - Throws: ``StoreError`` when the directory cannot be created or written, or holds files that
    ///   are not LiveList's.
    public init(directory: String) throws(StoreError) {
        self.directory = directory
        try Self.makeDirectory(directory)
        let entries = try Self.list(directory)
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
    }

    public func load() throws(StoreError) -> StoredLists {
        var stored = StoredLists()
        for entry in try Self.list(directory) {
            let path = directory + "/" + entry
            switch entry {
            case Self.marker, "lists", "apps", "secret":
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
        for entry in try Self.list(directory + "/lists") {
            let path = directory + "/lists/" + entry
            if entry.hasSuffix(Self.temporarySuffix) {
                unlink(path)
                continue
            }
            guard entry.hasSuffix(".list"), let name = ListName(String(entry.dropLast(5))) else {
                throw StoreError("\(path) is not a LiveList list file; move it out of the data directory")
            }
            let list = try Self.parseList(try Self.read(path), path: path)
            stored.jsonLists[name.rawValue] = list
            stored.highWater[name.rawValue] = max(stored.highWater[name.rawValue] ?? 0, list.version)
        }
        for entry in try Self.list(directory + "/apps") {
            let path = directory + "/apps/" + entry
            if entry.hasSuffix(Self.temporarySuffix) {
                unlink(path)
                continue
            }
            guard entry.hasSuffix(".state"), let name = ListName(String(entry.dropLast(6))) else {
                throw StoreError("\(path) is not a LiveList app state; move it out of the data directory")
            }
            stored.appStates[name.rawValue] = try Self.read(path)
        }
        lock.withLock { highWater = stored.highWater }
        return stored
    }

    public func saveHighWater(_ version: Int, for name: String) throws(StoreError) {
        try lock.withLock { () throws(StoreError) in
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
    }

    public func removeJSONList(name: String) throws(StoreError) {
        let path = directory + "/lists/\(name).list"
        if unlink(path) != 0 && errno != ENOENT {
            throw StoreError("cannot remove \(path): \(Self.errorText())")
        }
        try Self.syncDirectory(directory + "/lists")
    }

    public func saveAppState(name: String, bytes: [UInt8]) throws(StoreError) {
        try Self.writeAtomically(bytes, to: directory + "/apps/\(name).state")
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
                let version = Int(String(decoding: fields[1], as: UTF8.self)), version >= 0
            else {
                throw StoreError("\(path):\(number + 1) is not \"NAME VERSION\"; the file is corrupt")
            }
            result[name.rawValue] = version
        }
        return result
    }

    static func parseList(_ bytes: [UInt8], path: String) throws(StoreError) -> StoredLists.JSONList {
        guard let newline = bytes.firstIndex(of: 0x0A) else {
            throw StoreError("\(path) has no header line; the file is corrupt")
        }
        let fields = bytes[..<newline].split(separator: 0x20)
        guard fields.count == 3, String(decoding: fields[0], as: UTF8.self) == "livelist-list",
            String(decoding: fields[1], as: UTF8.self) == "1",
            let version = Int(String(decoding: fields[2], as: UTF8.self)), version > 0
        else {
            throw StoreError("\(path) does not start with \"livelist-list 1 VERSION\"; the file is corrupt")
        }
        return .init(version: version, body: Array(bytes[(newline + 1)...]))
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

    static func read(_ path: String) throws(StoreError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw StoreError("cannot open \(path): \(errorText())")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
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
        let temporary = path + temporarySuffix
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw StoreError("cannot write \(temporary): \(errorText())")
        }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { raw in
                Glibc.write(descriptor, raw.baseAddress! + written, raw.count - written)
            }
            if count < 0 {
                if errno == EINTR { continue }
                let message = errorText()
                close(descriptor)
                unlink(temporary)
                throw StoreError("cannot write \(temporary): \(message)")
            }
            written += count
        }
        guard fsync(descriptor) == 0 else {
            let message = errorText()
            close(descriptor)
            unlink(temporary)
            throw StoreError("cannot sync \(temporary): \(message)")
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
