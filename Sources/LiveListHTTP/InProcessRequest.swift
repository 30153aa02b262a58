extension HTTPRequest {
    /// A request made in process, as the connection would have parsed it from `target` (path and
    /// query, percent-encoded), for clients that drive a handler without a socket (LiveListTesting).
    /// `Content-Length` is added for a body. Fails with the parser's refusal for a target it refuses.
    package static func inProcess(
        _ method: HTTPMethod, _ target: String, headers: [(String, String)] = [], body: [UInt8] = [], from address: String = "127.0.0.1"
    ) -> Result<HTTPRequest, HTTPError> {
        let decoded: DecodedTarget
        switch TargetDecoder.decode(Array(target.utf8), method: method) {
        case let .success(found): decoded = found
        case let .failure(error): return .failure(error)
        }
        var fields = HTTPHeaders()
        for (name, value) in headers {
            fields.add(name, value)
        }
        if !body.isEmpty && !fields.contains("Content-Length") && !fields.contains("Transfer-Encoding") {
            fields.add("Content-Length", String(body.count))
        }
        var request = HTTPRequest(method: method, version: .http1_1, target: target, path: decoded.path, pathSegments: decoded.segments,
                                  query: decoded.query, headers: fields, body: body, trailers: HTTPHeaders(), keepAlive: true, host: "localhost")
        request.remoteAddress = address
        return .success(request)
    }
}
