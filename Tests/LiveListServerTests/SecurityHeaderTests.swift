@testable import LiveListServer
import LiveListTestSupport
import Testing

/// Every HTML page the server answers says how it may be loaded: a Content-Security-Policy that
/// forbids framing by other sites, and `nosniff` (the index, a list's page, an app's own page).
@Suite struct SecurityHeaderTests {
    @Test func everyPageSendsItsPolicyAndNosniff() async throws {
        let server = try await RouteClient()
        try await server.put("shown", ["a"])
        try server.app.route(.GET, "/about") { _ in .page("<p>about</p>") }
        for target in ["/", "/lists/shown", "/about"] {
            let page = try await server.get(target)
            #expect(page.status == 200, "\(target)")
            let policy = page.header("Content-Security-Policy") ?? ""
            #expect(policy.contains("frame-ancestors") && policy.contains("object-src 'none'") && policy.contains("base-uri 'none'"), "\(target): \(policy)")
            #expect(page.header("X-Content-Type-Options") == "nosniff", "\(target)")
        }
        // An app's page may set a policy of its own.
        try server.app.route(.GET, "/inline") { _ in
            var response = HTTPResponse.page("<p>inline</p>")
            response.headers.set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'")
            return response
        }
        #expect(try await server.get("/inline").header("Content-Security-Policy") == "default-src 'self'; script-src 'self' 'unsafe-inline'")
    }
}
