#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// What must be unchanged for a cached copy of a file to still be its content: the inode, the size,
/// and the modification and change times (any write or rename moves the change time).
struct FileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int
    var modified: Int
    var modifiedNanoseconds: Int
    var changed: Int
    var changedNanoseconds: Int
    var isRegular: Bool

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int(info.st_size)
        modified = Int(info.modificationTime.tv_sec)
        modifiedNanoseconds = Int(info.modificationTime.tv_nsec)
        changed = Int(info.st_ctim.tv_sec)
        changedNanoseconds = Int(info.st_ctim.tv_nsec)
        isRegular = info.st_mode & S_IFMT == S_IFREG
    }
}

/// A file's bytes and the fields derived from them. A class: a cache hit hands out one reference,
/// not a copy of every field.
final class CachedFile: Sendable {
    let identity: FileIdentity
    let bytes: [UInt8]
    let etag: String
    let lastModified: String
    let mediaType: String
    let answers: PreparedFileAnswers

    init(identity: FileIdentity, bytes: [UInt8], etag: String, lastModified: String, mediaType: String, answers: PreparedFileAnswers) {
        self.identity = identity
        self.bytes = bytes
        self.etag = etag
        self.lastModified = lastModified
        self.mediaType = mediaType
        self.answers = answers
    }
}

/// Whether `request` carries a validator (`If-None-Match`, `If-Modified-Since`): such a request may
/// get a 304, so it takes the path that compares them.
func hasValidators(_ request: HTTPRequest) -> Bool {
    request.headers.contains("If-None-Match") || request.headers.contains("If-Modified-Since")
}

/// A file's 200 answers made once (``PreparedResponse``): with a `v=` query (immutable) and without,
/// each in both encodings. Built by the same ``staticFileResponse`` as every other answer, so they
/// are byte for byte those answers. A class: a request reads the one answer it gets in place, instead
/// of copying all four out of the cache entry.
final class PreparedFileAnswers: Sendable {
    let immutable: PreparedResponse
    let revalidated: PreparedResponse

    init(bytes: [UInt8], etag: String, lastModified: String?, mediaType: String, compression: Compression, formatter: @escaping HTTPErrorFormatter) {
        func answer(immutable: Bool) -> PreparedResponse {
            let response = staticFileResponse(
                immutable: immutable, path: "", etag: etag, lastModified: lastModified, mediaType: mediaType, notModified: false,
                formatter: formatter) { bytes }
            return PreparedResponse(response, options: compression)
        }
        immutable = answer(immutable: true)
        revalidated = answer(immutable: false)
    }

    /// The 200 for a request without validators.
    func answer(to request: HTTPRequest) -> HTTPResponse {
        (request.queryValue("v") != nil ? immutable : revalidated).response(for: request)
    }
}

/// Small static files in memory, keyed by the path asked for (root plus decoded segments). An entry
/// is stored only after its real path was checked to lie inside the root; it is used only while a
/// `stat` of the same path still reaches the same inode with the same size and times, so a replaced,
/// edited or re-linked file is read again (and checked again) from disk.
final class StaticFileCache: Sendable {
    private struct Held {
        var entries: [String: CachedFile] = [:]
        var bytes = 0
    }

    private let held = Mutex(Held())

    func entry(for path: String, matching identity: FileIdentity) -> CachedFile? {
        guard identity.isRegular else { return nil }
        return held.withLock { held in
            guard let entry = held.entries[path] else { return nil }
            guard entry.identity == identity else {
                held.bytes -= entry.bytes.count
                held.entries[path] = nil
                return nil
            }
            return entry
        }
    }

    /// Files held now.
    var count: Int { held.withLock { $0.entries.count } }

    func insert(_ file: CachedFile, for path: String, limit: Int) {
        held.withLock { held in
            if let old = held.entries[path] { held.bytes -= old.bytes.count }
            held.entries[path] = nil
            guard held.bytes + file.bytes.count <= limit else { return }
            held.entries[path] = file
            held.bytes += file.bytes.count
        }
    }
}
