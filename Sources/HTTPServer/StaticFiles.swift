#if canImport(Glibc)
import Glibc
#endif

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

    /// Serves `directory`; nil when it does not exist or is not a directory.
    public init?(directory: String, errorFormatter: @escaping HTTPErrorFormatter = defaultHTTPErrorFormatter) {
        guard let resolved = realpath(directory, nil) else { return nil }
        defer { free(resolved) }
        var info = stat()
        guard stat(resolved, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        root = String(cString: resolved)
        self.errorFormatter = errorFormatter
    }

    /// The handler (synchronous: files are read on the event loop, so keep them small).
    public var handler: HTTPHandler {
        let files = self
        return .sync { request in files.respond(to: request) }
    }

    /// The response for `request`.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        guard request.method == .GET || request.method == .HEAD else {
            var response = HTTPResponse.error(
                HTTPError(.methodNotAllowed, code: "method_not_allowed", detail: "static files answer GET and HEAD"),
                formatter: errorFormatter)
            response.headers.set("Allow", "GET, HEAD")
            return response
        }
        guard request.pathSegments.allSatisfy({ !$0.hasPrefix(".") && !$0.contains("\0") && !$0.contains("/") }) else {
            return notFound(request)
        }
        var candidate = root
        for segment in request.pathSegments { candidate += "/" + segment }
        guard var file = open(inside: candidate) else { return notFound(request) }
        if file.isDirectory {
            guard let index = open(inside: candidate + "/index.html"), !index.isDirectory else { return notFound(request) }
            file = index
        }
        defer { Glibc.close(file.fd) }
        let etag = "\"\(String(file.size, radix: 16))-\(String(file.modified, radix: 16))\(String(file.modifiedNanoseconds, radix: 16))\""
        var headers: HTTPHeaders = [
            "ETag": etag,
            "Last-Modified": HTTPDate.format(file.modified),
            "Cache-Control": request.queryValue("v") != nil ? "public, max-age=31536000, immutable" : "no-cache",
            "X-Content-Type-Options": "nosniff",
        ]
        if notModified(request, etag: etag, modified: file.modified) {
            return HTTPResponse(status: .notModified, headers: headers)
        }
        guard file.size <= maxFileSize, let bytes = readAll(file.fd, size: file.size) else {
            return HTTPResponse.error(HTTPError(.internalServerError, code: "unreadable_file", detail: "the file cannot be served"), formatter: errorFormatter)
        }
        headers.add("Content-Type", Self.mediaType(for: file.path))
        return HTTPResponse(status: .ok, headers: headers, body: bytes)
    }

    private struct OpenFile {
        var fd: Int32
        var path: String
        var size: Int
        var modified: Int
        var modifiedNanoseconds: Int
        var isDirectory: Bool
    }

    /// Opens `path` if its real path lies inside the root and it is a regular file or directory.
    private func open(inside path: String) -> OpenFile? {
        guard let resolvedPointer = realpath(path, nil) else { return nil }
        let resolved = String(cString: resolvedPointer)
        free(resolvedPointer)
        guard resolved == root || resolved.hasPrefix(root == "/" ? "/" : root + "/") else { return nil }
        let fd = Glibc.open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            Glibc.close(fd)
            return nil
        }
        let kind = info.st_mode & S_IFMT
        guard kind == S_IFREG || kind == S_IFDIR else {
            Glibc.close(fd)
            return nil
        }
        return OpenFile(fd: fd, path: resolved, size: Int(info.st_size), modified: Int(info.st_mtim.tv_sec),
                        modifiedNanoseconds: Int(info.st_mtim.tv_nsec), isDirectory: kind == S_IFDIR)
    }

    private func readAll(_ fd: Int32, size: Int) -> [UInt8]? {
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

    private func notModified(_ request: HTTPRequest, etag: String, modified: Int) -> Bool {
        let matches = request.headers.values("If-None-Match")
        if !matches.isEmpty {
            let weak = { (tag: Substring) -> Substring in tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }
            for value in matches {
                for tag in value.split(separator: ",") {
                    let trimmed = tag.trimmingSpaces
                    if trimmed == "*" || weak(trimmed) == weak(Substring(etag)) { return true }
                }
            }
            return false
        }
        if let since = request.headers["If-Modified-Since"], let date = HTTPDate.parse(since) {
            return modified <= date
        }
        return false
    }

    private func notFound(_ request: HTTPRequest) -> HTTPResponse {
        HTTPResponse.error(HTTPError(.notFound, code: "not_found", detail: "\(request.path) does not exist"), formatter: errorFormatter)
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
