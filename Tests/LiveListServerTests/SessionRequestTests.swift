@testable import LiveListHTTP
@testable import LiveListServer
@testable import LiveListEngine
import Testing

/// A request's session, as the routes read it from its cookies.
@Suite struct SessionRequestTests {
    let keys = SessionKeys(secret: Array(repeating: 7, count: 32))

    @Test func aRequestHasASessionOnlyWithAMintedCookie() {
        func request(cookie: String?) -> HTTPRequest {
            var headers = HTTPHeaders()
            if let cookie { headers.add("Cookie", cookie) }
            return HTTPRequest(method: .GET, version: .http1_1, target: "/", path: "/", pathSegments: [], query: [],
                               headers: headers, body: [], trailers: HTTPHeaders(), keepAlive: true, host: "h")
        }
        let (id, cookie) = keys.mintSession()
        #expect(keys.session(from: request(cookie: "theme=dark; livelist_session=\(cookie)")) == id)
        #expect(keys.session(from: request(cookie: "livelist_session=\(id)")) == nil, "a chosen id")
        #expect(keys.session(from: request(cookie: "livelist_session=")) == nil)
        #expect(keys.session(from: request(cookie: nil)) == nil)
    }
}
