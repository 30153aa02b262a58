import LiveListEngine
@testable import LiveListServer
import LiveListTestSupport
import Testing

/// The session secret from the operator, rotated: a server whose secrets are [new, old] signs with the
/// new one and still accepts the session cookies, CSRF tokens and signed cookies of a server that
/// signed with the old one; once the old one is dropped, none of those pass.
@Suite struct SessionSecretRotationTests {
    static let old: [UInt8] = Array(repeating: 0x11, count: 32)
    static let new: [UInt8] = Array(repeating: 0x22, count: 32)

    private func client(_ secrets: [[UInt8]]) async throws -> RouteClient {
        let server = try await RouteClient { $0.sessionSecrets = secrets }
        try server.app.route(.GET, "/form") { request in .page(request.csrfField) }
        try server.app.route(.POST, "/form") { request in
            .page(request.cookie("mine").flatMap(server.app.verified) ?? "unsigned")
        }
        return server
    }

    @Test func aRotatedServerAcceptsWhatThePreviousSecretSignedAndSignsWithTheNewOne() async throws {
        let before = try await client([Self.old])
        let page = try await before.get("/form")
        let session = try #require(page.headers.values("Set-Cookie").first { $0.hasPrefix(SessionKeys.cookieName) }?.split(separator: ";").first.map(String.init))
        let token = try #require(page.text.firstMatch(of: /name="csrf" value="([0-9a-f]+)"/)?.1)
        let signed = before.app.signed("alice")
        let form = [("Content-Type", "application/x-www-form-urlencoded"), ("Cookie", "\(session); mine=\(signed)")]

        let rotated = try await client([Self.new, Self.old])
        let accepted = try await rotated.post("/form", headers: form, body: Array("csrf=\(token)".utf8))
        #expect(accepted.status == 200 && accepted.text == "alice", "\(accepted.status) \(accepted.text)")
        #expect(rotated.app.signed("alice") != signed, "the new secret signs")
        #expect(rotated.app.signed("alice") == (try await client([Self.new])).app.signed("alice"))

        let retired = try await client([Self.new])
        #expect(try await retired.post("/form", headers: form, body: Array("csrf=\(token)".utf8)).status == 403, "the old session and token")
        #expect(retired.app.verified(signed) == nil)
    }
}
