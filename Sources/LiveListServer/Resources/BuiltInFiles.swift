import Foundation
import LiveListHTTP

/// The files of `Public/` and `Templates/` compiled into the server (`EmbeddedResources`, written by
/// `Scripts/embed-resources.py`), so that a program that depends on LiveList serves its pages from any
/// working directory. `ServerConfiguration.publicDirectory` and `templatesDirectory` replace them.
enum BuiltInFiles {
    /// Every embedded file's bytes, by path from the repository's root (`Public/livelist.js`).
    static let all: [String: [UInt8]] = EmbeddedResources.base64.reduce(into: [:]) { files, entry in
        // The generator writes valid base64; a failure here is a broken build, caught by EmbeddedResourcesTests.
        files[entry.key] = Data(base64Encoded: entry.value, options: .ignoreUnknownCharacters).map { [UInt8]($0) } ?? []
    }

    /// The bytes of `Public/NAME`, if it is built in.
    static func publicFile(_ name: String) -> [UInt8]? {
        all["Public/" + name]
    }

    /// The built-in templates, by name without `.mustache`.
    static var templates: [String: String] {
        all.reduce(into: [:]) { templates, entry in
            guard entry.key.hasPrefix("Templates/"), entry.key.hasSuffix(".mustache") else { return }
            let name = entry.key.dropFirst("Templates/".count).dropLast(".mustache".count)
            templates[String(name)] = String(decoding: entry.value, as: UTF8.self)
        }
    }
}

/// Serves the built-in `Public/` files from memory, as `StaticFiles` serves a directory: `Content-Type`
/// by extension, an `ETag` (the content hash) answered 304 on `If-None-Match`, `HEAD`, and a query with
/// `v=` (the page's cache-busting hash) served as immutable. Any other path is 404.
struct BuiltInStaticFiles: Sendable {
    struct File: Sendable {
        var bytes: [UInt8]
        var etag: String
        var mediaType: String
    }

    /// By request path (`/livelist.js`).
    let files: [String: File]
    let errorFormatter: HTTPErrorFormatter

    init(errorFormatter: @escaping HTTPErrorFormatter) {
        var files: [String: File] = [:]
        for (path, bytes) in BuiltInFiles.all where path.hasPrefix("Public/") {
            let name = String(path.dropFirst("Public".count))
            files[name] = File(bytes: bytes, etag: "\"\(contentHash(bytes))\"", mediaType: StaticFiles.mediaType(for: name))
        }
        self.files = files
        self.errorFormatter = errorFormatter
    }

    /// The handler; its head check answers 405 to methods other than GET and HEAD before any body is read.
    var handler: HTTPHandler {
        let files = self
        return HTTPHandler.sync { request in files.respond(to: request) }
            .checkingHeads { request in
                request.method == .GET || request.method == .HEAD ? nil : files.methodNotAllowed()
            }
    }

    func respond(to request: HTTPRequest) -> HTTPResponse {
        guard request.method == .GET || request.method == .HEAD else { return methodNotAllowed() }
        guard let file = files[request.path] else {
            return HTTPResponse.error(HTTPError(.notFound, code: "not_found", detail: "\(request.path) does not exist"), formatter: errorFormatter)
        }
        let cacheControl = request.queryValue("v") != nil ? "public, max-age=31536000, immutable" : "no-cache"
        let headers: HTTPHeaders = [
            "ETag": file.etag, "Cache-Control": cacheControl, "X-Content-Type-Options": "nosniff", "Content-Type": file.mediaType,
        ]
        if Self.matches(request.headers.values("If-None-Match"), etag: file.etag) {
            return HTTPResponse(status: .notModified, headers: headers)
        }
        var response = HTTPResponse(status: .ok, headers: headers, body: file.bytes)
        // The bytes never change while the process runs: their gzip is made once.
        response.compressionKey = "static " + request.path + " " + file.etag
        return response
    }

    /// Whether an `If-None-Match` list names `etag` (weakly compared) or is `*`.
    static func matches(_ values: [String], etag: String) -> Bool {
        values.flatMap { $0.split(separator: ",") }.contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }

    private func methodNotAllowed() -> HTTPResponse {
        var response = HTTPResponse.error(
            HTTPError(.methodNotAllowed, code: "method_not_allowed", detail: "static files answer GET and HEAD"), formatter: errorFormatter)
        response.headers.set("Allow", "GET, HEAD")
        return response
    }
}
