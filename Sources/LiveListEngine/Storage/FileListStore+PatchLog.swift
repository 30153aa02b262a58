#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The logs of patches: DIR/lists/NAME.log, one checksummed record per patch after the list file's version.

extension FileListStore {
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
}
