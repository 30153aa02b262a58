#if canImport(Glibc)
import Glibc
private let systemRead = Glibc.read
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
import Darwin
private let systemRead = Darwin.read
private let systemWrite = Darwin.write
#endif

// Reading and writing files: whole reads, atomic replacement (temporary file, fsync, rename, directory
// fsync) and appends that are fsynced before they return.

extension FileListStore {
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

    /// Writes all of `bytes` to `descriptor` (again after an interruption), then fsyncs it.
    static func writeAndSync(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(StoreError) {
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
}
