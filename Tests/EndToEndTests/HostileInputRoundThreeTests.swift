import Foundation
import LiveListTestSupport
import Testing

/// Hostile input, round three, against the real binary: what a stream's token alone can do, what the
/// access log keeps of it, and what a proxy left out of the configuration makes the server say.
@Suite struct HostileInputRoundThreeTests {
    /// A multiplexed stream opened without a session (a script's, with the read token) has no token:
    /// nobody can drop its lists or add to them, whatever they saw of the stream.
    @Test func aStreamOpenedWithoutASessionCannotBeChanged() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--read-token", "r3ad", "--access-log"])
            defer { server.stop(); server.removeData() }
            #expect(try Client.put("/lists/feed", port: server.port, json: #"{"sections": []}"#).status == 201)
            let stream = try EventStream(path: "/events?list=feed&list=todo", port: server.port, headers: [("Authorization", "Bearer r3ad")])
            defer { stream.close() }
            #expect(stream.headStatus == 200)
            #expect(try Client.put("/lists/feed", port: server.port, json: #"{"sections": [{"id": "s", "cells": []}]}"#).status == 200)
            #expect(try stream.next() != nil, "the stream carries the lists it asked for")
            #expect(stream.token == nil, "a stream without a session is named by no token")
            // Any token at all is refused, without a cookie or with one.
            let change = Array(#"{"drop":["feed"],"add":["feed"]}"#.utf8)
            for token in [stream.token ?? "0123456789abcdef0123456789abcdef"] {
                let answer = try Client.request("POST", "/events/\(token)", port: server.port,
                                                headers: [("Content-Type", "application/json")], body: change)
                #expect(answer.status == 404 && answer.text.contains("unknown_stream"))
            }
            Thread.sleep(forTimeInterval: 0.3)
            #expect(!server.errorOutput.contains("/events/0123456789abcdef"), "the access log never writes a stream's token")
        }
    }

    /// Requests that carry X-Forwarded-For from a peer that is not a trusted proxy are logged once
    /// (not once each), and counted in /metrics; from a trusted proxy (a CIDR range), not at all.
    @Test func forwardedHeadersFromAnUntrustedPeerAreReportedOnce() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            for _ in 0 ..< 5 {
                _ = try Client.get("/healthz", port: server.port, headers: [("X-Forwarded-For", "198.51.100.4")])
            }
            Thread.sleep(forTimeInterval: 0.3)
            let said = server.errorOutput.components(separatedBy: "is not a trusted proxy").count - 1
            #expect(said == 1, "\(server.errorOutput)")
            let metrics = try Client.get("/metrics", port: server.port).text
            #expect(metrics.contains("livelist_untrusted_forwarded_total 5"), "\(metrics)")
            let trusting = try LiveServer(arguments: ["--trusted-proxy", "127.0.0.0/8"])
            defer { trusting.stop(); trusting.removeData() }
            _ = try Client.get("/healthz", port: trusting.port, headers: [("X-Forwarded-For", "198.51.100.4")])
            Thread.sleep(forTimeInterval: 0.3)
            #expect(!trusting.errorOutput.contains("is not a trusted proxy"))
            #expect(try Client.get("/metrics", port: trusting.port).text.contains("livelist_untrusted_forwarded_total 0"))
        }
    }

    /// A sign-out is kept by the store: the ended cookie stays refused after the server restarts on the
    /// same data folder, while a sign-in that was not ended goes on.
    @Test func aSignOutOutlivesARestart() async throws {
        try await offThePool {
            let arguments = ["--read-token", "r3ad-restart", "--write-token", "w"]
            let first = try LiveServer(arguments: arguments)
            defer { first.stop(); first.removeData() }
            #expect(try Client.put("/lists/private", port: first.port, json: #"{"sections": []}"#, headers: [("Authorization", "Bearer w")]).status == 201)
            func signIn(port: Int) throws -> (session: String, reader: String, csrf: String) {
                let page = try Client.get("/signin", port: port)
                let session = try #require(page.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
                let csrf = try #require(page.text.range(of: #"(?<=name="csrf" value=")[0-9a-f]{64}"#, options: .regularExpression).map { String(page.text[$0]) })
                let answer = try Client.request("POST", "/signin", port: port,
                                                headers: [("Cookie", session), ("Content-Type", "application/x-www-form-urlencoded")],
                                                body: Array("csrf=\(csrf)&token=r3ad-restart&next=%2Flists%2Fprivate".utf8))
                #expect(answer.status == 303)
                let reader = try #require(answer.headers.first { $0.0.lowercased() == "set-cookie" && $0.1.hasPrefix("livelist_reader=") }?.1)
                // The session is rotated at sign-in: the new one comes with the reader's cookie.
                let sessionName = String(session.prefix { $0 != "=" }) + "="
                let rotated = answer.headers.first { $0.0.lowercased() == "set-cookie" && $0.1.hasPrefix(sessionName) }?.1
                let newSession = rotated.flatMap { $0.split(separator: ";").first.map(String.init) } ?? session
                let signedIn = try Client.get("/signin", port: port, headers: [("Cookie", "\(newSession); \(reader.split(separator: ";")[0])")])
                let newCSRF = try #require(signedIn.text.range(of: #"(?<=name="csrf" value=")[0-9a-f]{64}"#, options: .regularExpression).map { String(signedIn.text[$0]) })
                return (newSession, String(reader.split(separator: ";")[0]), newCSRF)
            }
            let ended = try signIn(port: first.port)
            let kept = try signIn(port: first.port)
            #expect(try Client.get("/lists/private", port: first.port, headers: [("Cookie", ended.reader)]).status == 200)
            let out = try Client.request("POST", "/signout", port: first.port,
                                         headers: [("Cookie", "\(ended.session); \(ended.reader)"), ("Content-Type", "application/x-www-form-urlencoded")],
                                         body: Array("csrf=\(ended.csrf)".utf8))
            #expect(out.status == 303)
            #expect(try Client.get("/lists/private", port: first.port, headers: [("Cookie", ended.reader)]).status == 401)
            first.stop()
            let second = try LiveServer(arguments: arguments, dataDirectory: first.dataDirectory)
            defer { second.stop() }
            #expect(try Client.get("/lists/private", port: second.port, headers: [("Cookie", ended.reader)]).status == 401,
                    "a cookie signed out before the restart is refused after it")
            #expect(try Client.get("/lists/private", port: second.port, headers: [("Cookie", kept.reader)]).status == 200)
        }
    }
}
