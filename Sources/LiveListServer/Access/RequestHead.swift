public import LiveListHTTP

/// What the app's `authenticate` sees of a request: its method, target and header fields (cookies
/// among them), and who sent it. The body is not part of it: streams and pages have none, and an
/// identity that depended on one could not be checked again when access is re-checked.
public struct RequestHead: Sendable {
    /// The method.
    public let method: HTTPMethod
    /// The request target as received (`/lists/team?x=1`).
    public let target: String
    /// The decoded, normalised path.
    public let path: String
    /// The header fields.
    public let headers: HTTPHeaders
    /// The peer's address (`127.0.0.1`), empty when unknown.
    public let peerAddress: String
    /// The client's address: the peer's, or what a trusted proxy (`--trusted-proxy`) says in
    /// `X-Forwarded-For`; nil when unknown.
    public let clientAddress: String?

    init(_ request: HTTPRequest, trustedProxies: TrustedProxies) {
        method = request.method
        target = request.target
        path = request.path
        headers = request.headers
        peerAddress = request.remoteAddress
        clientAddress = trustedProxies.clientAddress(request)
    }

    /// The value of the cookie `name`, if the request carries one.
    public func cookie(_ name: String) -> String? {
        HeaderParsing.cookie(name, in: headers.values("Cookie"))
    }

    /// The credentials of `Authorization: Bearer CREDENTIALS`, if the request carries them.
    public var bearerToken: String? {
        headers["Authorization"].flatMap(HeaderParsing.bearerCredentials).map(String.init)
    }
}
