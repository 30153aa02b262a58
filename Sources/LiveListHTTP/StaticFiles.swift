#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Serves the files of one directory: `Content-Type` by extension, `ETag` and `Last-Modified`
/// with `If-None-Match`/`If-Modified-Since` answered 304, `HEAD`, and `index.html` for
/// directories. A query with `v=` (a content hash added by the page) is served as immutable.
///
/// Nothing outside the root is reachable: the path is already decoded and normalised by the
/// parser (which refuses encoded slashes and NUL), segments starting with `.` are not served,
/// and the resolved real path, symlinks followed, must lie inside the root's real path.
public struct StaticFiles: Sendable {
    /// The root directory's real path.
    public let root: String
    /// Largest file served.
    public var maxFileSize = 64 * 1024 * 1024
    /// Shapes the 404 and 405 responses.
    public var errorFormatter: HTTPErrorFormatter
    /// Files up to this size are kept in memory after their first read, and every later request for
    /// them costs one `stat` (identity, size, modification and change times must all still match).
    public var maxCachedFileSize = 1024 * 1024
    /// Total bytes the memory cache may hold; past it files are read from disk on each request.
    public var maxCachedBytes = 32 * 1024 * 1024
    /// The options of the `compressed()` layer in front: files kept in memory keep their answers
    /// ready in both encodings with these (``PreparedResponse``).
    public var compression = Compression()
    /// Seconds since a file's last change before it may be cached (tests lower it).
    var cacheMinimumAge = 2
    let cache = StaticFileCache()

    /// Serves `directory`; nil when it does not exist or is not a directory.
    public init?(directory: String, errorFormatter: @escaping HTTPErrorFormatter = defaultHTTPErrorFormatter) {
        guard let resolved = realpath(directory, nil) else { return nil }
        defer { free(resolved) }
        var info = stat()
        guard stat(resolved, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        root = String(cString: resolved)
        self.errorFormatter = errorFormatter
    }

    /// The handler (synchronous: files are read on the event loop, so keep them small). Its head
    /// check answers 405 to methods other than GET and HEAD before any body is read.
    public var handler: HTTPHandler {
        let files = self
        return staticFilesHandler(formatter: errorFormatter) { request in files.respond(to: request) }
    }

    /// The response for `request`.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        guard request.method == .GET || request.method == .HEAD else { return methodNotAllowed() }
        // Byte checks (stricter than Character ones: a combining mark cannot hide a leading dot).
        guard request.pathSegments.allSatisfy({ $0.utf8.first != 0x2E && !$0.utf8.contains(0) && !$0.utf8.contains(0x2F) }) else {
            return notFound(request)
        }
        var length = root.utf8.count
        for segment in request.pathSegments { length += 1 + segment.utf8.count }
        var candidate = ""
        candidate.reserveCapacity(length)
        candidate += root
        for segment in request.pathSegments {
            candidate += "/"
            candidate += segment
        }
        var info = stat()
        if stat(candidate, &info) == 0, let cached = cache.entry(for: candidate, matching: FileIdentity(info)) {
            if !hasValidators(request) {
                return cached.answers.answer(to: request)
            }
            return response(to: request, etag: cached.etag, lastModified: cached.lastModified, modified: cached.identity.modified,
                            mediaType: cached.mediaType) { cached.bytes }
        }
        var file: OpenFile
        switch open(inside: candidate) {
        case .success(let opened): file = opened
        case .failure(let failure): return answer(failure, request)
        }
        if file.isDirectory {
            systemClose(file.fd)
            var index: OpenFile
            switch open(inside: candidate + "/index.html") {
            case .success(let opened): index = opened
            case .failure(let failure): return answer(failure, request)
            }
            guard !index.isDirectory else {
                systemClose(index.fd)
                return notFound(request)
            }
            index.viaIndex = true
            file = index
        }
        defer { systemClose(file.fd) }
        let identity = file.identity
        let etag = "\"\(String(identity.size, radix: 16))-\(String(identity.modified, radix: 16))\(String(identity.modifiedNanoseconds, radix: 16))\""
        let lastModified = HTTPDate.format(identity.modified)
        let mediaType = Self.mediaType(for: file.path)
        // Kept only when the file was reached without a directory index (so that one stat of the same
        // path revalidates it) and when it last changed `cacheMinimumAge` seconds ago or earlier: a
        // write within the timestamps' granularity of the read could otherwise leave the times
        // unchanged (the "racy file" case).
        let cacheable = file.isRegular && !file.viaIndex && identity.size <= min(maxFileSize, maxCachedFileSize)
            && Int(time(nil)) - identity.changed >= cacheMinimumAge
        return response(to: request, etag: etag, lastModified: lastModified, modified: identity.modified, mediaType: mediaType) {
            guard identity.size <= maxFileSize, let bytes = readAll(file.fd, size: identity.size) else { return nil }
            var after = stat()
            if cacheable, fstat(file.fd, &after) == 0, FileIdentity(after) == identity {
                let answers = PreparedFileAnswers(
                    bytes: bytes, etag: etag, lastModified: lastModified, mediaType: mediaType, compression: compression, formatter: errorFormatter)
                cache.insert(CachedFile(identity: identity, bytes: bytes, etag: etag, lastModified: lastModified, mediaType: mediaType, answers: answers),
                             for: candidate, limit: maxCachedBytes)
            }
            return bytes
        }
    }

    /// 200 with the bytes `body` gives, or 304, or 500 when `body` gives nil.
    func response(
        to request: HTTPRequest, etag: String, lastModified: String, modified: Int, mediaType: String,
        body: () -> [UInt8]?
    ) -> HTTPResponse {
        staticFileResponse(
            to: request, etag: etag, lastModified: lastModified, mediaType: mediaType,
            notModified: notModified(request, etag: etag, modified: modified), formatter: errorFormatter, body: body)
    }

    /// Why a file could not be opened.
    enum OpenFailure: Error {
        /// Missing, outside the root, or not a regular file or directory.
        case notFound
        /// The process or the system is out of file descriptors (EMFILE, ENFILE).
        case exhausted
    }

    /// 404, or 503 when descriptors ran out (never the server's own path: only the one asked for).
    func answer(_ failure: OpenFailure, _ request: HTTPRequest) -> HTTPResponse {
        switch failure {
        case .notFound:
            return notFound(request)
        case .exhausted:
            var response = HTTPResponse.error(
                HTTPError(.serviceUnavailable, code: "overloaded", detail: "the server cannot open more files now; retry shortly"),
                formatter: errorFormatter)
            response.headers.set("Retry-After", "1")
            return response
        }
    }

    func methodNotAllowed() -> HTTPResponse {
        staticMethodNotAllowed(formatter: errorFormatter)
    }

    struct OpenFile {
        var fd: Int32
        var path: String
        var identity: FileIdentity
        var isDirectory: Bool
        var isRegular: Bool { !isDirectory }
        var viaIndex = false
    }

    /// Opens `path` if its real path lies inside the root and it is a regular file or directory.
    func open(inside path: String) -> Result<OpenFile, OpenFailure> {
        guard let resolvedPointer = realpath(path, nil) else { return .failure(Self.failure(errno)) }
        let resolved = String(cString: resolvedPointer)
        free(resolvedPointer)
        guard resolved == root || resolved.hasPrefix(root == "/" ? "/" : root + "/") else { return .failure(.notFound) }
        let fd = systemOpen(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return .failure(Self.failure(errno)) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            systemClose(fd)
            return .failure(.notFound)
        }
        let kind = info.st_mode & S_IFMT
        guard kind == S_IFREG || kind == S_IFDIR else {
            systemClose(fd)
            return .failure(.notFound)
        }
        return .success(OpenFile(fd: fd, path: resolved, identity: FileIdentity(info), isDirectory: kind == S_IFDIR))
    }

    static func failure(_ code: Int32) -> OpenFailure {
        code == EMFILE || code == ENFILE ? .exhausted : .notFound
    }

    func readAll(_ fd: Int32, size: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        let ok = bytes.withUnsafeMutableBytes { buffer -> Bool in
            while done < size {
                let count = read(fd, buffer.baseAddress! + done, size - done)
                if count > 0 { done += count; continue }
                if count < 0 && errno == EINTR { continue }
                return false
            }
            return true
        }
        return ok ? bytes : nil
    }

    func notModified(_ request: HTTPRequest, etag: String, modified: Int) -> Bool {
        let matches = request.headers.values("If-None-Match")
        if !matches.isEmpty { return noneMatch(matches, etag: etag) }
        if let since = request.headers["If-Modified-Since"], let date = HTTPDate.parse(since) {
            return modified <= date
        }
        return false
    }

    func notFound(_ request: HTTPRequest) -> HTTPResponse {
        staticNotFound(request, formatter: errorFormatter)
    }

    /// The media type for a file name's extension (`application/octet-stream` when unknown).
    public static func mediaType(for path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "application/octet-stream" }
        switch name[name.index(after: dot)...].lowercased() {
        case "html", "htm": return "text/html; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "json", "map": return "application/json"
        case "webmanifest": return "application/manifest+json"
        case "txt": return "text/plain; charset=utf-8"
        case "md": return "text/markdown; charset=utf-8"
        case "xml": return "application/xml"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "gif": return "image/gif"
        case "webp": return "image/webp"
        case "avif": return "image/avif"
        case "ico": return "image/x-icon"
        case "wasm": return "application/wasm"
        case "woff": return "font/woff"
        case "woff2": return "font/woff2"
        case "ttf": return "font/ttf"
        case "otf": return "font/otf"
        case "pdf": return "application/pdf"
        case "mp4": return "video/mp4"
        case "webm": return "video/webm"
        case "mp3": return "audio/mpeg"
        case "wav": return "audio/wav"
        default: return "application/octet-stream"
        }
    }
}
