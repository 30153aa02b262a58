import Foundation
import LiveListHTTP
import LiveListHTML
import LiveListTestSupport
import Testing

private func cells(_ ids: [String]) -> String {
    #"{"sections":[{"id":"s","cells":["# + ids.map { #"{"id":"\#($0)","text":"\#($0)"}"# }.joined(separator: ",") + "]}]}"
}

@Suite struct StreamTests {
    @Test func streamDeliversEveryChangeInOrderAndResumesWithoutLossOrRepeat() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--heartbeat", "0.2"])
            defer { server.stop(); server.removeData() }
            #expect(try Client.put("/lists/g", port: server.port, json: cells(["a"])).status == 201)
            var model = try snapshot("g", port: server.port).model
            var version = 1
            var random = SplitMix64(seed: 42)
            var pool = ["a"]
            var next = 0
            var eventsRead = 0
            for _ in 0 ..< 6 {
                let stream = try EventStream(path: "/lists/g/events", port: server.port, headers: [("Last-Event-ID", String(version))])
                #expect(stream.headStatus == 200)
                // Writes while connected; read some of them, then disconnect at a random point.
                let writes = Int.random(in: 1 ... 4, using: &random)
                for _ in 0 ..< writes {
                    next += 1
                    pool.insert("c\(next)", at: Int.random(in: 0 ... pool.count, using: &random))
                    if pool.count > 4 { pool.remove(at: Int.random(in: 0 ..< pool.count, using: &random)) }
                    pool.shuffle(using: &random)
                    let put = try Client.put("/lists/g", port: server.port, json: cells(pool))
                    #expect(put.status == 200, "\(put.text)")
                }
                // Read a random number of events (the server may have joined several changes into one).
                let reads = Int.random(in: 0 ... writes, using: &random)
                for _ in 0 ..< reads {
                    guard let event = try stream.next(timeout: 1) else { break }
                    let changeset = try decodeChangeset(Array(event.data.utf8))
                    #expect(Int(event.id)! > version, "no event repeats")
                    // The log holds every version of this list: each event is a diff from the client's version.
                    #expect(changeset.from == version && !changeset.isReset, "event \(event.id) after version \(version)")
                    try model.apply(changeset)
                    version = changeset.version
                    eventsRead += 1
                }
                stream.close()
            }
            #expect(eventsRead > 0, "the checks on live events ran")
            // The last reconnect brings the rest in one changeset.
            let stream = try EventStream(path: "/lists/g/events?since=0", port: server.port, headers: [("Last-Event-ID", String(version))])
            let current = try snapshot("g", port: server.port)
            if current.version != version {
                let event = try #require(try stream.next())
                let changeset = try decodeChangeset(Array(event.data.utf8))
                #expect(changeset.from == version && !changeset.isReset, "one diff from the client's version")
                try model.apply(changeset)
                version = changeset.version
            }
            #expect(version == current.version && model == current.model)
            // Heartbeats (every 0.2 s here) arrive on an idle stream, and nothing else does. Waited for
            // up to 10 s: on a loaded machine the loop's timer scan may run late, which is no failure.
            let idleUntil = Date().addingTimeInterval(10)
            while !stream.comments.contains(where: { $0.hasPrefix(": ping") }) && Date() < idleUntil {
                #expect(try stream.next(timeout: 0.5) == nil)
            }
            #expect(stream.comments.contains { $0.hasPrefix(": ping") })
        }
    }

    @Test func versionBeyondTheLogGetsExactlyOneReset() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--log-count", "2"])
            defer { server.stop(); server.removeData() }
            _ = try Client.put("/lists/g", port: server.port, json: cells(["a"]))
            for index in 0 ..< 6 { _ = try Client.put("/lists/g", port: server.port, json: cells(["a", "b\(index)"])) }
            let stream = try EventStream(path: "/lists/g/events?since=1", port: server.port)
            let event = try #require(try stream.next())
            let changeset = try decodeChangeset(Array(event.data.utf8))
            #expect(changeset.isReset && changeset.version == 7 && event.id == "7")
            #expect(try stream.next(timeout: 0.5) == nil, "exactly one reset")
            for (query, expected) in [("since=abc", 400), ("since=-1", 400)] {
                #expect(try Client.get("/lists/g/events?\(query)", port: server.port).status == expected)
            }
            let bad = try EventStream(path: "/lists/g/events", port: server.port, headers: [("Last-Event-ID", "garbage")])
            #expect(try decodeChangeset(Array(try #require(try bad.next()).data.utf8)).isReset, "a bad Last-Event-ID gets a reset, not an error")
            #expect(try Client.get("/lists/missing/events", port: server.port).status == 404)
        }
    }

    @Test func changesRouteAnswersEmptyCurrentOrReset() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            _ = try Client.put("/lists/g", port: server.port, json: cells(["a"]))
            let current = try decodeChangeset(try Client.get("/lists/g/changes?since=1", port: server.port).body)
            #expect(current.operations.isEmpty && current.from == 1 && current.version == 1)
            #expect(try decodeChangeset(try Client.get("/lists/g/changes?since=99", port: server.port).body).isReset)
            #expect(try Client.get("/lists/g/changes?since=x", port: server.port).status == 400)
            #expect(try Client.get("/lists/g/changes", port: server.port).status == 400)
        }
    }

    /// A reader that never reads does not hold back a reader that does.
    @Test func stalledReaderDoesNotSlowOthers() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            _ = try Client.put("/lists/g", port: server.port, json: cells(["a"]))
            let stalled = try EventStream(path: "/lists/g/events", port: server.port)
            var stalledBuffer: Int32 = 4096
            setsockopt(stalled.socket, SOL_SOCKET, SO_RCVBUF, &stalledBuffer, socklen_t(MemoryLayout<Int32>.size))
            let reader = try EventStream(path: "/lists/g/events", port: server.port)
            let big = String(repeating: "x", count: 20_000)
            for index in 0 ..< 40 {
                _ = try Client.put("/lists/g", port: server.port, json: #"{"sections":[{"id":"s","cells":[{"id":"a","text":"\#(big)\#(index)"}]}]}"#)
                let event = try #require(try reader.next(timeout: 5), "the reading stream got change \(index)")
                #expect(event.id == String(index + 2))
            }
            _ = stalled
        }
    }

    @Test func multiplexedStreamCarriesVersionVectorsAndSurvivesADelete() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            _ = try Client.put("/lists/a", port: server.port, json: cells(["x"]))
            _ = try Client.put("/lists/b", port: server.port, json: cells(["y"]))
            let stream = try EventStream(path: "/events?list=a&list=b&list=c&since=a:1,b:1", port: server.port)
            let missing = try #require(try stream.next())
            #expect(missing.data.contains(#""list":"c""#) && missing.data.contains(#""op":"reset""#))
            _ = try Client.put("/lists/b", port: server.port, json: cells(["y", "z"]))
            #expect(try #require(try stream.next()).id == "a:1,b:2,c:0")
            let single = try EventStream(path: "/lists/a/events", port: server.port)
            #expect(try Client.request("DELETE", "/lists/a", port: server.port).status == 200)
            let final = try #require(try single.next())
            #expect(final.data.contains(#""op":"reset","html":"""#))
            #expect(try single.next(timeout: 2) == nil, "the single-list stream ends after the final reset")
            #expect(try #require(try stream.next()).id == "a:2,b:2,c:0")
            _ = try Client.put("/lists/b", port: server.port, json: cells(["z"]))
            #expect(try #require(try stream.next()).id == "a:2,b:3,c:0", "the multiplexed stream goes on")
        }
    }

    @Test func listsJoinAndLeaveAnOpenMultiplexedStream() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            for name in ["a", "b", "c"] {
                _ = try Client.put("/lists/\(name)", port: server.port, json: cells(["x"]))
            }
            _ = try Client.put("/lists/b", port: server.port, json: cells(["x", "y"]))
            // A browser's stream: opened with the session cookie of a page view.
            func sessionCookie() throws -> String {
                let page = try Client.get("/lists/a", port: server.port, headers: [("Accept", "text/html")])
                return String(try #require(page.headers.first { $0.0.lowercased() == "set-cookie" }?.1.split(separator: ";").first))
            }
            let session = try sessionCookie()
            let stream = try EventStream(path: "/events?list=a&since=a:1", port: server.port, headers: [("Cookie", session)])
            _ = try Client.put("/lists/a", port: server.port, json: cells(["y"]))
            #expect(try #require(try stream.next()).id == "a:2")
            let token = try #require(stream.token, "the stream's first event names it")
            func change(_ json: String, token: String = token) throws -> RawHTTPResponse {
                try Client.request("POST", "/events/\(token)", port: server.port, headers: [("Content-Type", "application/json"), ("Cookie", session)],
                                   body: Array(json.utf8))
            }
            // b joins at version 1: it gets what it missed, then its changes; c joins live; a leaves.
            #expect(try change(#"{"add":["b","c"],"since":{"b":1},"drop":["a"]}"#).status == 204)
            let caughtUp = try #require(try stream.next())
            #expect(caughtUp.data.contains(#""list":"b","from":1,"version":2"#))
            #expect(caughtUp.id.hasPrefix("b:2,"))
            _ = try Client.put("/lists/a", port: server.port, json: cells(["z"]))
            _ = try Client.put("/lists/c", port: server.port, json: cells(["z"]))
            let live = try #require(try stream.next())
            #expect(live.data.contains(#""list":"c""#), "a left the stream: its change does not come")
            #expect(live.id == "b:2,c:2")
            // Refusals: a malformed body, a list past the cap, a token no stream has.
            #expect(try change(#"{"add":"b"}"#).status == 422)
            #expect(try change(#"{"add":["b"],"extra":1}"#).status == 422)
            #expect(try change(#"{"since":{"b":-1}}"#).status == 400)
            let many = (0 ..< 70).map { "\"l\($0)\"" }.joined(separator: ",")
            #expect(try change(#"{"add":[\#(many)]}"#).status == 400)
            #expect(try change(#"{"add":["a"]}"#, token: "0123456789abcdef0123456789abcdef").status == 404)
            // Another browser session, or none, may not change it.
            for other in [[("Cookie", try sessionCookie())], []] {
                #expect(try Client.request("POST", "/events/\(token)", port: server.port, headers: [("Content-Type", "application/json")] + other,
                                           body: Array(#"{"add":["a"]}"#.utf8)).status == 404)
            }
            #expect(try Client.request("POST", "/events/\(token)", port: server.port, headers: [("Content-Type", "text/plain"), ("Cookie", session)],
                                       body: Array("{}".utf8)).status == 415)
            // A name that has no list yet waits for it, as at connect.
            #expect(try change(#"{"add":["later"]}"#).status == 204)
            #expect(try #require(try stream.next()).data.contains(#""list":"later""#))
            _ = try Client.put("/lists/later", port: server.port, json: cells(["n"]))
            let created = try #require(try stream.next())
            #expect(created.data.contains(#""list":"later","from":0,"version":1"#))
            #expect(created.id == "b:2,c:2,later:1")
        }
    }
}

@Suite struct PersistenceTests {
    @Test func killNineLosesNoAcknowledgedPutAndVersionsNeverGoBack() async throws {
        try await offThePool {
            let data = NSTemporaryDirectory() + "livelist-kill-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: data) }
            var expected: (version: Int, model: ListModel)
            do {
                let server = try LiveServer(dataDirectory: data)
                for index in 0 ..< 5 {
                    #expect(try Client.put("/lists/g", port: server.port, json: cells((0 ... index).map { "c\($0)" })).status < 300)
                }
                #expect(try Client.request("DELETE", "/lists/gone", port: server.port).status == 404)
                _ = try Client.put("/lists/gone", port: server.port, json: cells(["a"]))
                _ = try Client.request("DELETE", "/lists/gone", port: server.port)
                expected = try snapshot("g", port: server.port)
                server.stop(kill: true)
            }
            let server = try LiveServer(dataDirectory: data)
            defer { server.stop() }
            let restored = try snapshot("g", port: server.port)
            #expect(restored.version == expected.version && restored.model == expected.model)
            let next = try decodeChangeset(try Client.put("/lists/g", port: server.port, json: cells(["z"])).body)
            #expect(next.version == expected.version + 1)
            let recreated = try decodeChangeset(try Client.put("/lists/gone", port: server.port, json: cells(["b"])).body)
            #expect(recreated.from == 0 && recreated.version == 3, "a re-created list continues its versions")
        }
    }

    @Test func foreignDataDirectoryStopsStartup() async throws {
        try await offThePool {
            let data = NSTemporaryDirectory() + "livelist-foreign-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: data) }
            try Data("mine".utf8).write(to: URL(fileURLWithPath: data + "/notes.txt"))
            #expect(throws: ServerError.self) { try LiveServer(dataDirectory: data) }
        }
    }
}

@Suite struct StartupTests {
    @Test func brokenOrMissingTemplatesStopStartupWithAClearMessage() async throws {
        try await offThePool {
            let missing = NSTemporaryDirectory() + "livelist-templates-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: missing, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: missing) }
            try Data("<p>{{list}}</p>".utf8).write(to: URL(fileURLWithPath: missing + "/page.mustache"))
            let error = #expect(throws: ServerError.self) { try LiveServer(arguments: ["--templates", missing]) }
            #expect(error?.description.contains("index.mustache is missing") == true, "\(String(describing: error))")

            try Data("{{#unclosed}}".utf8).write(to: URL(fileURLWithPath: missing + "/index.mustache"))
            let broken = #expect(throws: ServerError.self) { try LiveServer(arguments: ["--templates", missing]) }
            #expect(broken?.description.contains("cannot load the templates") == true, "\(String(describing: broken))")
        }
    }
}

@Suite struct PageTests {
    @Test func pageIsCompleteWithoutJavaScriptAndNegotiatesJSON() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let page = try Client.get("/lists/todo", port: server.port)
            #expect(page.status == 200 && page.header("Vary") == "Accept, Accept-Encoding")
            #expect(page.text.contains(#"data-list="todo""#) && page.text.contains(#"<meta name="livelist-csrf""#))
            #expect(page.header("Set-Cookie")?.contains("HttpOnly; SameSite=Lax") == true)
            let scriptRange = try #require(page.text.range(of: #"/livelist.js\?v=[0-9a-f]+"#, options: .regularExpression))
            let script = String(page.text[scriptRange])
            let js = try Client.get(script, port: server.port)
            #expect(js.status == 200 && js.header("Cache-Control")?.contains("immutable") == true)
            let json = try Client.get("/lists/todo", port: server.port, headers: [("Accept", "application/json, text/html;q=0.5")])
            #expect(json.header("Content-Type")?.hasPrefix("application/json") == true)
            #expect(try Client.get("/", port: server.port).text.contains("/lists/emoji"))
            #expect(try Client.get("/healthz", port: server.port).status == 200)
            #expect(try Client.get("/metrics", port: server.port).text.contains("livelist_lists "))
            #expect(try Client.get("/lists/nope", port: server.port).status == 404)
            #expect(try Client.get("/../etc/passwd", port: server.port).status != 200)
        }
    }

    @Test func sessionCookieIsSecureWhenAsked() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--secure-cookies"])
            defer { server.stop(); server.removeData() }
            let cookie = try Client.get("/lists/todo", port: server.port).header("Set-Cookie")
            #expect(cookie?.hasSuffix("; HttpOnly; SameSite=Lax; Secure") == true, "\(String(describing: cookie))")
        }
    }

    @Test func pagesJSONAndStaticFilesAreServedCompressed() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let gzipHeader = [("Accept-Encoding", "gzip, deflate")]
            let page = try Client.get("/lists/todo", port: server.port, headers: gzipHeader)
            #expect(page.header("Content-Encoding") == "gzip")
            #expect(page.header("Vary")?.contains("Accept-Encoding") == true)
            let html = String(decoding: try #require(gunzip(page.body)), as: UTF8.self)
            #expect(html.contains(#"data-list="todo""#))

            let plainScript = try Client.get("/livelist.js", port: server.port)
            let script = try Client.get("/livelist.js", port: server.port, headers: gzipHeader)
            #expect(script.header("Content-Encoding") == "gzip" && script.body.count < plainScript.body.count / 2)
            #expect(gunzip(script.body) == plainScript.body)
            #expect(script.header("ETag") != plainScript.header("ETag"), "each representation has its own validator")

            let json = try Client.get("/lists/todo", port: server.port, headers: gzipHeader + [("Accept", "application/json")])
            #expect(json.header("Content-Encoding") == "gzip")
            #expect(String(decoding: try #require(gunzip(json.body)), as: UTF8.self).hasPrefix(#"{"protocol":1"#))
            let refused = try Client.get("/lists/todo", port: server.port, headers: [("Accept-Encoding", "gzip;q=0")])
            #expect(refused.header("Content-Encoding") == nil)

            // curl as an independent peer: it asks for gzip, checks the stream and decompresses it.
            let curl = try ChildProcess(
                "/usr/bin/env", ["curl", "-s", "--compressed", "-w", "\\n%{size_download} %{content_type}", "http://127.0.0.1:\(server.port)/livelist.js"],
                output: .capture)
            let output = PipeReading.readToEnd(curl.outputDescriptor)
            curl.waitUntilExit()
            #expect(curl.terminationStatus == 0)
            let text = String(decoding: output, as: UTF8.self)
            #expect(text.hasPrefix(String(decoding: plainScript.body, as: UTF8.self)), "curl decompressed the same script")
            let downloaded = Int(text.split(separator: "\n").last?.split(separator: " ").first ?? "") ?? 0
            #expect(downloaded == script.body.count, "curl received the compressed bytes")
        }
    }

    @Test func actionsNeedTheSessionsToken() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let (cookie, token) = try pageSession("todo", port: server.port)
            let form = try Client.request("POST", "/lists/todo/actions", port: server.port,
                                          headers: [("Cookie", cookie), ("Content-Type", "application/x-www-form-urlencoded")],
                                          body: Array("csrf=\(token)&action=add:&text=From+a+form".utf8))
            #expect(form.status == 303 && form.header("Location") == "/lists/todo")
            #expect(try Client.get("/lists/todo", port: server.port).text.contains("From a form"))
            let json = try Client.request("POST", "/lists/todo/actions", port: server.port,
                                          headers: [("Cookie", cookie), ("Content-Type", "application/json"), ("X-CSRF-Token", token)],
                                          body: Array(#"{"type":"select","cell":"2"}"#.utf8))
            #expect(json.status == 204)
            let forged = try Client.request("POST", "/lists/todo/actions", port: server.port,
                                            headers: [("Content-Type", "application/json"), ("X-CSRF-Token", token)],
                                            body: Array(#"{"type":"delete","cell":"2"}"#.utf8))
            #expect(forged.status == 403, "a token without its cookie is forged")

            // Drag to reorder (what livelist-drag.js posts): item 3 dropped at the top of "done".
            let drag = try Client.request("POST", "/lists/todo/actions", port: server.port,
                                          headers: [("Cookie", cookie), ("Content-Type", "application/json"), ("X-CSRF-Token", token)],
                                          body: Array(#"{"type":"moveAfter","cell":"3","after":"","section":"done"}"#.utf8))
            #expect(drag.status == 204)
            let after = try snapshot("todo", port: server.port).model
            #expect(after.sections.map { $0.cells.map(\.key) } == [["2", "4"], ["3", "1"]], "\(after)")
            #expect(try Client.get("/lists/todo", port: server.port).text.contains("/livelist-drag.js?v="))
        }
    }
}
