import Foundation
import Testing

/// Session ids are minted by the server: a cookie the client made up is no session.
@Suite(.serialized) struct SessionCookieTests {
    /// The value of a `Set-Cookie: livelist_session=VALUE; …` header.
    func cookieValue(_ response: Response) -> String? {
        guard let header = response.header("Set-Cookie"), header.hasPrefix("livelist_session=") else { return nil }
        return header.dropFirst("livelist_session=".count).split(separator: ";").first.map(String.init)
    }

    func sessionCount(port: Int) throws -> Int? {
        let metrics = try Client.get("/metrics", port: port).text
        return metrics.split(separator: "\n").first { $0.hasPrefix("livelist_sessions ") }
            .flatMap { Int($0.split(separator: " ")[1]) }
    }

    @Test func onlyMintedCookiesAreSessions() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let first = try Client.get("/lists/todo", port: server.port)
            let minted = try #require(cookieValue(first))
            #expect(minted.utf8.count == 64 && minted.allSatisfy { $0.isHexDigit && !$0.isUppercase })
            // The minted cookie is kept: no new one.
            let again = try Client.get("/lists/todo", port: server.port, headers: [("Cookie", "livelist_session=\(minted)")])
            #expect(again.status == 200 && again.header("Set-Cookie") == nil)

            // A chosen id (the old 32-digit shape) and an altered minted cookie each get a new session.
            let chosen = String(repeating: "ab", count: 16)
            let altered = String(minted.dropLast()) + (minted.hasSuffix("0") ? "1" : "0")
            for forged in [chosen, altered, chosen + chosen] {
                let page = try Client.get("/lists/todo", port: server.port, headers: [("Cookie", "livelist_session=\(forged)")])
                let replacement = try #require(cookieValue(page), "\(forged) was taken as a session")
                #expect(replacement != forged && replacement != minted)
                // The page's token belongs to the new session, never to the forged cookie.
                let tokenRange = try #require(page.text.range(of: #"(?<=name="csrf" value=")[0-9a-f]{64}"#, options: .regularExpression))
                let action = try Client.request("POST", "/lists/todo/actions", port: server.port,
                                                headers: [("Cookie", "livelist_session=\(forged)"), ("Content-Type", "application/json"),
                                                          ("X-CSRF-Token", String(page.text[tokenRange]))],
                                                body: Array(#"{"type":"select","cell":"2"}"#.utf8))
                #expect(action.status == 403)
            }

            // Only a minted cookie's stream enters the session table.
            let forgedStream = try EventStream(path: "/lists/todo/events", port: server.port,
                                               headers: [("Cookie", "livelist_session=\(chosen)")])
            defer { forgedStream.close() }
            #expect(forgedStream.headStatus == 200)
            let stream = try EventStream(path: "/lists/todo/events", port: server.port, headers: [("Cookie", "livelist_session=\(minted)")])
            defer { stream.close() }
            #expect(stream.headStatus == 200)
            let deadline = Date().addingTimeInterval(5)
            while try (sessionCount(port: server.port) ?? 0) < 1, Date() < deadline {
                Thread.sleep(forTimeInterval: 0.02)
            }
            // Both streams are open; give the forged one time to show up if it were counted.
            Thread.sleep(forTimeInterval: 0.2)
            #expect(try sessionCount(port: server.port) == 1)
        }
    }

    @Test func aMintedCookieOutlivesARestart() async throws {
        try await offThePool {
            let first = try LiveServer()
            let data = first.dataDirectory
            defer { try? FileManager.default.removeItem(atPath: data) }
            let minted = try #require(cookieValue(try Client.get("/lists/todo", port: first.port)))
            first.stop()
            let second = try LiveServer(dataDirectory: data)
            defer { second.stop() }
            let page = try Client.get("/lists/todo", port: second.port, headers: [("Cookie", "livelist_session=\(minted)")])
            #expect(page.status == 200 && page.header("Set-Cookie") == nil, "the secret is kept in the data folder")
        }
    }
}
