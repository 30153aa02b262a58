// Parsing the files of the data directory: a file that does not parse stops start-up, naming it.

extension FileListStore {
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
}
