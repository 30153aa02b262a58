import Foundation
import LiveListHTML
import LiveListTestSupport
import Testing

func snapshot(_ name: String, port: Int) throws -> (version: Int, model: ListModel) {
    let response = try Client.get("/lists/\(name)", port: port, headers: [("Accept", "application/json")])
    guard response.status == 200 else { throw ServerError("snapshot of \(name): \(response.status) \(response.text)") }
    return try decodeSnapshot(response.body)
}

@Suite struct JSONContractTests {
    /// Seeded random sequences of states with hostile keys and text: after each PUT, the changes since
    /// the previous version, applied to the previous snapshot, give the new snapshot.
    @Test("200 random state sequences over HTTP")
    func randomSequences() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            for sequence in 0 ..< 200 {
                let seed = UInt64(sequence) &* 0x9E37 &+ 11
                var random = SplitMix64(seed: seed)
                let name = "seq\(sequence)"
                let (first, second) = makeStatePair(using: &random)
                let (_, third) = makeStatePair(using: &random)
                var previous = try ListModel(RenderedList())
                var previousVersion = 0
                for (step, state) in [first, second, first, third].enumerated() {
                    let response = try Client.put("/lists/\(name)", port: server.port, json: try putBody(state))
                    #expect(response.status == (step == 0 ? 201 : 200), "seed \(seed) step \(step): \(response.text)")
                    guard response.status < 300 else { return }
                    let answered = try decodeChangeset(response.body)
                    let current = try snapshot(name, port: server.port)
                    if step == 0 {
                        #expect(answered.from == 0, "a creating PUT answers from 0")
                    } else {
                        let changes = try decodeChangeset(try Client.get("/lists/\(name)/changes?since=\(previousVersion)", port: server.port).body)
                        // The log holds the previous version: the changes route answers the PUT's changeset
                        // (docs/PROTOCOL.md, Catching up), never a reset.
                        #expect(changes == answered, "seed \(seed) step \(step): \(changes.operations.map(\.name)) instead of \(answered.operations.map(\.name))")
                        try previous.apply(changes)
                        #expect(previous == current.model, "seed \(seed) step \(step): changes applied to the previous snapshot")
                        #expect(current.version == previousVersion + (changes.operations.isEmpty ? 0 : 1), "seed \(seed)")
                    }
                    previous = current.model
                    previousVersion = current.version
                }
                _ = try Client.request("DELETE", "/lists/\(name)", port: server.port)
            }
        }
    }

    @Test func identicalPutMakesNoVersionAndReorderIsMovesOnly() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let body = #"{"sections":[{"id":"s","cells":[{"id":"a","text":"A"},{"id":"b","text":"B"},{"id":"c","text":"C"}]}]}"#
            #expect(try Client.put("/lists/g", port: server.port, json: body).status == 201)
            let same = try Client.put("/lists/g", port: server.port, json: body)
            #expect(same.status == 200 && same.header("ETag") == "\"1\"")
            #expect(try decodeChangeset(same.body).operations.isEmpty)
            let reordered = try Client.put("/lists/g", port: server.port, json: #"{"sections":[{"id":"s","cells":[{"id":"c","text":"C"},{"id":"a","text":"A"},{"id":"b","text":"B"}]}]}"#)
            let changeset = try decodeChangeset(reordered.body)
            #expect(changeset.operations == [.move(cell: "c", section: "s", after: nil)])
        }
    }

    @Test func badBodiesGetTheirStatusAndPath() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--max-body", "2000", "--max-cells", "3"])
            defer { server.stop(); server.removeData() }
            let cases: [(String, [(String, String)], Int, String)] = [
                (#"{"sections": [}"#, [], 400, #""error":"malformed_json""#),
                (#"{"sections": [{"id": "a", "cells": [{"id": "x", "text": 5}]}]}"#, [], 422, #"sections[0].cells[0].text: expected a string, got a number"#),
                (#"{"sections": [{"id": "a", "cells": [{"id": "x", "text": "1"}, {"id": "x", "text": "2"}]}]}"#, [], 422, #"sections[0].cells[1].id: duplicate \"x\""#),
                (#"{"sections": [], "extra": true}"#, [], 422, #""error":"unknown_field""#),
                (#"{"sections": [{"id": "a", "cells": [{"id":"1","text":""},{"id":"2","text":""},{"id":"3","text":""},{"id":"4","text":""}]}]}"#, [], 422, #""error":"too_many_cells""#),
                (String(repeating: " ", count: 3000) + "{}", [], 413, #""error":"#),
                (#"{"sections": []}"#, [("If-Match", "five")], 400, #""error":"malformed_if_match""#),
                (#"{"sections": []}"#, [("If-Match", "\"9\"")], 412, #""error":"version_mismatch""#),
            ]
            for (body, headers, status, fragment) in cases {
                let response = try Client.put("/lists/bad", port: server.port, json: body, headers: headers)
                #expect(response.status == status, "\(body.prefix(60)): \(response.text)")
                #expect(response.text.contains(fragment), "\(response.text)")
                #expect(response.header("Content-Type")?.hasPrefix("application/json") == true)
            }
            let plain = try Client.request("PUT", "/lists/bad", port: server.port, headers: [("Content-Type", "text/plain")], body: Array("{}".utf8))
            #expect(plain.status == 415)
            #expect(try Client.get("/lists/bad", port: server.port).status == 404, "no refused PUT created the list")
            #expect([400, 404].contains(try Client.get("/lists/..%2Fetc", port: server.port).status), "an encoded slash is refused")
        }
    }

    @Test func writeTokenIsRequiredWhenConfigured() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--write-token", "s3cret"])
            defer { server.stop(); server.removeData() }
            let body = #"{"sections": []}"#
            #expect(try Client.put("/lists/g", port: server.port, json: body).status == 401)
            #expect(try Client.put("/lists/g", port: server.port, json: body, headers: [("Authorization", "Bearer wrong")]).status == 401)
            #expect(try Client.put("/lists/g", port: server.port, json: body, headers: [("Authorization", "Bearer s3cret")]).status == 201)
            #expect(try Client.request("DELETE", "/lists/g", port: server.port).status == 401)
        }
    }

    /// The read token guards every read of a JSON list on the real binary (snapshot, changes, both
    /// stream routes, the page), names of no list too, and the access log names what refused.
    @Test func theReadTokenGuardsEveryReadRoute() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--read-token", "r3ad", "--access-log"])
            defer { server.stop(); server.removeData() }
            #expect(try Client.put("/lists/feed", port: server.port, json: #"{"sections": []}"#).status == 201)
            let bearer = [("Authorization", "Bearer r3ad")]
            for path in ["/lists/feed", "/lists/feed/changes?since=0", "/lists/feed/events", "/events?list=feed", "/lists/none", "/lists/none/changes?since=0"] {
                let refused = try Client.request("GET", path, port: server.port, headers: [("Accept", "application/json")])
                #expect(refused.status == 401 && refused.text.contains("sign_in_required"), "\(path): \(refused.status)")
                if !path.contains("events") {
                    #expect(try Client.request("GET", path, port: server.port, headers: bearer + [("Accept", "application/json")]).status != 401, "\(path) with the token")
                } else {
                    // A stream is not read to its end: its head says it was accepted.
                    let connection = try #require(RawHTTPConnection(port: server.port))
                    #expect(connection.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer r3ad\r\n\r\n"))
                    #expect(connection.readResponse(head: true)?.status == 200, "\(path) with the token")
                }
            }
            let navigation = try Client.request("GET", "/lists/feed", port: server.port, headers: [("Accept", "text/html")])
            #expect(navigation.status == 303 && navigation.header("Location") == "/signin?next=/lists/feed")
            Thread.sleep(forTimeInterval: 0.3)
            #expect(server.errorOutput.contains("refused unauthenticated by rule read-token"), "the access log names the rule")
        }
    }

    /// The access log names the client from X-Forwarded-For only when the peer is a trusted proxy.
    @Test func accessLogTrustsForwardedForOnlyFromTrustedProxies() async throws {
        try await offThePool {
            let trusting = try LiveServer(arguments: ["--access-log", "--trusted-proxy", "127.0.0.1"])
            defer { trusting.stop(); trusting.removeData() }
            _ = try Client.get("/healthz?trusted", port: trusting.port, headers: [("X-Forwarded-For", "198.51.100.4, 203.0.113.7")])
            let distrusting = try LiveServer(arguments: ["--access-log"])
            defer { distrusting.stop(); distrusting.removeData() }
            _ = try Client.get("/healthz?claimed", port: distrusting.port, headers: [("X-Forwarded-For", "203.0.113.7")])
            Thread.sleep(forTimeInterval: 0.3)
            #expect(trusting.errorOutput.contains(#"203.0.113.7 "GET /healthz?trusted HTTP/1.1" 200"#), "\(trusting.errorOutput)")
            #expect(distrusting.errorOutput.contains(#"127.0.0.1 "GET /healthz?claimed HTTP/1.1" 200"#), "\(distrusting.errorOutput)")
            #expect(!distrusting.errorOutput.contains("203.0.113.7"))
        }
    }

    @Test func proxiedWritesWithoutTokenAreRefused() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let response = try Client.put("/lists/g", port: server.port, json: #"{"sections": []}"#, headers: [("X-Forwarded-For", "203.0.113.9")])
            #expect(response.status == 403 && response.text.contains("writes_need_token"))
        }
    }
}
