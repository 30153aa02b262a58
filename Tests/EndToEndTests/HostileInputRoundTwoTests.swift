import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Raw sockets for what `Client` cannot say: heads without their bodies, chosen `Host` fields, and
/// whether the server closed the connection.
private enum Wire {
    static func setReceiveTimeout(_ socket: Int32, _ seconds: Double) {
        let whole = max(0, Int(seconds))
        var value = timeval(tv_sec: whole, tv_usec: max(1_000, Int((seconds - Double(whole)) * 1_000_000)))
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// What the server sends until it closes the connection (`closed`: an end of stream or a reset)
    /// or `timeout` seconds pass (`closed` false).
    static func readUntilClosed(_ socket: Int32, timeout: Double) -> (bytes: [UInt8], closed: Bool) {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return (data, false) }
            setReceiveTimeout(socket, left)
            let count = recv(socket, &buffer, buffer.count, 0)
            if count > 0 {
                data += buffer[0 ..< count]
                continue
            }
            if count == 0 { return (data, true) }
            let failure = errno
            if failure == EINTR { continue }
            return (data, failure == ECONNRESET)
        }
    }

    /// The response head (through its blank line), read within `timeout` seconds; nil without one.
    static func readHead(_ socket: Int32, timeout: Double) -> [UInt8]? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let end = data.firstRange(of: [13, 10, 13, 10]) {
                return Array(data[..<end.upperBound])
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            setReceiveTimeout(socket, left)
            let count = recv(socket, &buffer, buffer.count, 0)
            if count > 0 {
                data += buffer[0 ..< count]
                continue
            }
            if count < 0 && errno == EINTR { continue }
            return nil
        }
    }

    /// Sends `bytes` on a new connection (a send the server cuts short by answering early is no
    /// failure), then reads until the server closes it or `timeout` passes.
    static func exchange(_ bytes: [UInt8], port: Int, timeout: Double = 8) throws -> (response: Response?, closed: Bool) {
        let socket = try Client.connect(port: port)
        defer { Glibc.close(socket) }
        try? Client.send(socket, bytes)
        let (data, closed) = readUntilClosed(socket, timeout: timeout)
        let response = try? Client.parse(data)
        return (response: response, closed: closed)
    }

    /// One request with the caller's own `Host` field (and any others), `Connection: close`, read to the end.
    static func request(_ method: String, _ path: String, port: Int, host: String, headers: [(String, String)] = [], json: String? = nil) throws -> Response {
        let socket = try Client.connect(port: port)
        defer { Glibc.close(socket) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let body = Array((json ?? "").utf8)
        if json != nil { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        head += "\r\n"
        try Client.send(socket, Array(head.utf8) + body)
        return try Client.parse(Client.readToEnd(socket))
    }
}

/// Reading `/metrics` (Prometheus text: `name value` lines).
private enum Gauges {
    /// The value of the unlabelled sample `name` in `text`, nil when there is none.
    static func value(_ name: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            if parts.count >= 2, parts[0] == name {
                return Double(parts[1])
            }
        }
        return nil
    }

    /// `name` on the server's `/metrics` now (from loopback, without a token).
    static func read(_ name: String, port: Int) throws -> Double? {
        let response = try Client.get("/metrics", port: port)
        guard response.status == 200 else { throw ServerError("/metrics: \(response.status) \(response.text)") }
        return value(name, in: response.text)
    }
}

/// The `error` code and `detail` of a JSON error answer.
private func errorOf(_ response: Response) -> (code: String, detail: String)? {
    guard let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
        let code = object["error"] as? String
    else { return nil }
    return (code, object["detail"] as? String ?? "")
}

/// Whether the detail of an error answer names the field `text` (as a word, not in `text_too_long`).
private func namesTheTextField(_ response: Response) -> Bool {
    guard let detail = errorOf(response)?.detail else { return false }
    return detail.range(of: #"\btext\b"#, options: .regularExpression) != nil
}

/// A JSON object parsed from `response`'s body.
private func objectOf(_ response: Response) -> [String: Any]? {
    try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
}

/// The `version` of a list's snapshot JSON.
private func versionOf(_ list: String, port: Int) throws -> Int {
    let response = try Client.get("/lists/\(list)", port: port, headers: [("Accept", "application/json")])
    guard response.status == 200, let version = objectOf(response)?["version"] as? Int else {
        throw ServerError("no version in the snapshot of \(list): \(response.status) \(response.text.prefix(200))")
    }
    return version
}

/// The `op` names (and cells) of a changeset answer.
private func operationsOf(_ response: Response) -> [(op: String, cell: String?)] {
    guard let ops = objectOf(response)?["ops"] as? [[String: Any]] else { return [] }
    return ops.map { (op: $0["op"] as? String ?? "", cell: $0["cell"] as? String) }
}

/// Posts one todo action as a browser's script does (JSON, cookie and CSRF token).
private func todoAction(_ fields: [String: String], port: Int, session: (cookie: String, token: String)) throws -> Response {
    let body = try JSONSerialization.data(withJSONObject: fields as [String: Any])
    return try Client.request("POST", "/lists/todo/actions", port: port,
                              headers: [("Cookie", session.cookie), ("Content-Type", "application/json"), ("X-CSRF-Token", session.token)],
                              body: Array(body))
}

/// The second round of denial-of-service fixes, over real sockets against the real binary.
@Suite struct HostileInputRoundTwoTests {
    /// 1. A title over 200 characters or over 800 UTF-8 bytes is refused with 422 `text_too_long`
    /// naming the field, and changes nothing; a short one is taken.
    @Test func textLimitsRefuseALongTitle() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let session = try pageSession("todo", port: server.port)
            let before = try versionOf("todo", port: server.port)

            // One user-perceived character of 1,001 bytes: under the character limit, over the byte limit.
            let stacked = "a" + String(repeating: "\u{301}", count: 500)
            #expect(stacked.count == 1 && stacked.utf8.count == 1_001)
            let heavy = try todoAction(["type": "add", "text": stacked], port: server.port, session: session)
            #expect(heavy.status == 422, "1,001 bytes in one character: \(heavy.status) \(heavy.text)")
            #expect(errorOf(heavy)?.code == "text_too_long", "\(heavy.text)")
            #expect(namesTheTextField(heavy), "the detail names the field text: \(heavy.text)")

            // 201 plain characters: over the character limit.
            let wide = String(repeating: "z", count: 201)
            let long = try todoAction(["type": "add", "text": wide], port: server.port, session: session)
            #expect(long.status == 422, "201 characters: \(long.status) \(long.text)")
            #expect(errorOf(long)?.code == "text_too_long", "\(long.text)")
            #expect(namesTheTextField(long), "the detail names the field text: \(long.text)")

            #expect(try versionOf("todo", port: server.port) == before, "refused titles change nothing")
            let page = try Client.get("/lists/todo", port: server.port)
            #expect(page.status == 200)
            #expect(page.body.firstRange(of: Array(String(repeating: "\u{301}", count: 10).utf8)) == nil, "the stacked marks are not on the page")
            #expect(!page.text.contains(String(repeating: "z", count: 200)), "no part of the long title is on the page")

            let milk = try todoAction(["type": "add", "text": "Milk"], port: server.port, session: session)
            #expect(milk.status == 204, "\(milk.status) \(milk.text)")
            #expect(try versionOf("todo", port: server.port) == before + 1)
            #expect(try Client.get("/lists/todo", port: server.port).text.contains("Milk"))
            // Exactly at the limit is taken.
            let limit = try todoAction(["type": "add", "text": String(repeating: "y", count: 200)], port: server.port, session: session)
            #expect(limit.status == 204, "200 characters: \(limit.status) \(limit.text)")
        }
    }

    /// 2. An action announcing a large body is answered 413 on its head and closed; the default limit
    /// of an action body is 65,536 bytes.
    @Test func actionBodiesAreSmall() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let session = try pageSession("todo", port: server.port)
            let head = "POST /lists/todo/actions HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nContent-Type: application/json\r\n"
                + "Cookie: \(session.cookie)\r\nX-CSRF-Token: \(session.token)\r\n"

            // The head alone, the body never sent: answered at once, and the connection closed.
            let announced = try Wire.exchange(Array((head + "Content-Length: 8388608\r\n\r\n").utf8), port: server.port)
            #expect(announced.response?.status == 413, "\(String(describing: announced.response?.status)) \(announced.response?.text ?? "")")
            #expect(announced.closed, "the server closes the connection instead of waiting for 8 MiB")

            // A whole body of 70,000 bytes, over the 65,536 default.
            let prefix = #"{"type":"add","text":""#
            let suffix = #""}"#
            let json = prefix + String(repeating: "x", count: 70_000 - prefix.utf8.count - suffix.utf8.count) + suffix
            #expect(json.utf8.count == 70_000)
            let sent = try Wire.exchange(Array((head + "Content-Length: \(json.utf8.count)\r\nConnection: close\r\n\r\n" + json).utf8), port: server.port)
            #expect(sent.response?.status == 413, "\(String(describing: sent.response?.status)) \(sent.response?.text ?? "")")

            #expect(try Client.get("/healthz", port: server.port).status == 200)
            #expect(try todoAction(["type": "add", "text": "Milk"], port: server.port, session: session).status == 204, "small actions still work")
        }
    }

    /// 3. A body announced on a route that takes none is refused on its head (413, closed) and never
    /// holds the body budget: a PUT on another connection meanwhile is served.
    @Test func bodiesOnRoutesThatTakeNoneAreRefused() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nContent-Length: 8388608\r\n\r\n".utf8)
            var sockets: [Int32] = []
            defer { for socket in sockets { Glibc.close(socket) } }
            for _ in 0 ..< 8 {
                let socket = try Client.connect(port: server.port)
                sockets.append(socket)
                try Client.send(socket, request)
            }
            var answers: [(response: Response?, closed: Bool)] = []
            // The first answer shows the server has read its head; the others are read after the PUT.
            let first = Wire.readUntilClosed(sockets[0], timeout: 6)
            let firstResponse = try? Client.parse(first.bytes)
            answers.append((response: firstResponse, closed: first.closed))

            let put = try Client.put("/lists/budget", port: server.port, json: #"{"sections":[{"id":"s","cells":[{"id":"c1","text":"hello"}]}]}"#)
            #expect(put.status == 201, "a small PUT beside the refused GETs: \(put.status) \(put.text)")

            for socket in sockets.dropFirst() {
                let read = Wire.readUntilClosed(socket, timeout: 6)
                let response = try? Client.parse(read.bytes)
                answers.append((response: response, closed: read.closed))
            }
            for (index, answer) in answers.enumerated() {
                #expect(answer.response?.status == 413, "GET \(index) with a body: \(String(describing: answer.response?.status))")
                #expect(answer.closed, "GET \(index) with a body is closed")
            }
            #expect(try Client.get("/healthz", port: server.port).status == 200)
        }
    }

    /// 4. Twenty stalled readers of one large list's reset hold its bytes once, not twenty times.
    @Test func resetBytesAreSharedByStalledReaders() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let text = String(repeating: "x", count: 1_000)
            let cells = (0 ..< 1_000).map { #"{"id":"c\#($0)","text":"\#($0)\#(text)"}"# }.joined(separator: ",")
            let put = try Client.put("/lists/shared", port: server.port, json: #"{"sections":[{"id":"s","cells":["# + cells + "]}]}")
            #expect(put.status == 201, "\(put.status) \(put.text.prefix(200))")
            let snapshot = try Client.get("/lists/shared", port: server.port, headers: [("Accept", "application/json")])
            #expect(snapshot.status == 200)
            let snapshotSize = snapshot.body.count
            #expect(snapshotSize > 1_000_000, "the snapshot is about 1 MB or more: \(snapshotSize)")
            let initial = try #require(try Gauges.read("livelist_stream_queued_bytes", port: server.port), "/metrics has livelist_stream_queued_bytes")

            var sockets: [Int32] = []
            defer { for socket in sockets { Glibc.close(socket) } }
            let request = Array("GET /lists/shared/events HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nAccept: text/event-stream\r\nLast-Event-ID: x\r\n\r\n".utf8)
            for _ in 0 ..< 20 {
                // A small receive window and segment size: the server's kernel takes little of each reset,
                // so what it queues for these readers shows in its own gauge.
                let socket = try Client.connect(port: server.port, receiveBuffer: 4096, segmentSize: 536)
                sockets.append(socket)
                try Client.send(socket, request)
            }

            var highest = initial
            var streamsOpen = 0.0
            // Until all twenty are open (up to 60 s on a loaded machine: the suite runs in parallel),
            // then 3 s more of the gauge while they stall.
            var deadline = Date().addingTimeInterval(60)
            var settled = false
            while Date() < deadline {
                let metrics = try Client.get("/metrics", port: server.port)
                #expect(metrics.status == 200)
                if let queued = Gauges.value("livelist_stream_queued_bytes", in: metrics.text) {
                    highest = max(highest, queued)
                }
                if let open = Gauges.value("livelist_streams_open", in: metrics.text) {
                    streamsOpen = max(streamsOpen, open)
                }
                if streamsOpen >= 20, !settled {
                    settled = true
                    deadline = Date().addingTimeInterval(3)
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(streamsOpen >= 20, "the twenty stalled streams were open: \(streamsOpen)")
            #expect(highest < 3 * Double(snapshotSize),
                    "queued for streams at most \(highest) bytes, the snapshot has \(snapshotSize) (twenty copies would be about \(20 * snapshotSize))")
            #expect(try Client.get("/healthz", port: server.port).status == 200, "the server still serves")
        }
    }

    /// 5. Names a multiplexed stream waited on, never created, are forgotten once its stream ends.
    @Test func namesOfListsThatNeverExistedAreForgotten() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let start = try #require(try Gauges.read("livelist_list_names", port: server.port), "/metrics has livelist_list_names")
            let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
            var statuses: [Int] = []
            for _ in 0 ..< 200 {
                let names = (0 ..< 32).map { _ in String((0 ..< 16).map { _ in alphabet.randomElement()! }) }
                let query = names.map { "list=\($0)" }.joined(separator: "&")
                let socket = try Client.connect(port: server.port)
                defer { Glibc.close(socket) }
                try Client.send(socket, Array("GET /events?\(query) HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nAccept: text/event-stream\r\n\r\n".utf8))
                let head = Wire.readHead(socket, timeout: 5)
                statuses.append(head.flatMap { try? Client.parse($0).status } ?? 0)
            }
            #expect(statuses.allSatisfy { $0 == 200 }, "every stream of 32 names opened: \(Set(statuses))")

            var names = try Gauges.read("livelist_list_names", port: server.port) ?? .infinity
            let deadline = Date().addingTimeInterval(5)
            while names > start && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.05)
                names = try Gauges.read("livelist_list_names", port: server.port) ?? .infinity
            }
            #expect(names <= start, "the registry holds \(names) names, \(start) before 6,400 names were asked for")
            #expect(try Client.get("/healthz", port: server.port).status == 200)
        }
    }

    /// 6. Without a write token the loopback trust needs a loopback Host and, from a browser, its own
    /// Origin (no DNS rebinding); with a token, the token decides.
    @Test func loopbackTrustRefusesReboundNames() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let port = server.port
            let body = #"{"sections":[{"id":"s","cells":[{"id":"c1","text":"hello"}]}]}"#

            let rebound = try Wire.request("PUT", "/lists/rebind", port: port, host: "attacker.example:\(port)", json: body)
            #expect(rebound.status == 403, "PUT with Host attacker.example: \(rebound.status) \(rebound.text)")
            #expect(errorOf(rebound)?.code == "writes_need_token", "\(rebound.text)")
            #expect(errorOf(rebound)?.detail.contains("token") == true, "the detail mentions the token: \(rebound.text)")

            let foreignOrigin = try Wire.request("PUT", "/lists/rebind", port: port, host: "127.0.0.1:\(port)",
                                                 headers: [("Origin", "http://attacker.example:\(port)")], json: body)
            #expect(foreignOrigin.status == 403, "PUT with Origin attacker.example: \(foreignOrigin.status) \(foreignOrigin.text)")
            #expect(errorOf(foreignOrigin)?.code == "writes_need_token", "\(foreignOrigin.text)")

            let local = try Wire.request("PUT", "/lists/rebind", port: port, host: "localhost:\(port)",
                                         headers: [("Origin", "http://localhost:\(port)")], json: body)
            #expect(local.status == 201 || local.status == 200, "PUT from localhost: \(local.status) \(local.text)")

            let delete = try Wire.request("DELETE", "/lists/rebind", port: port, host: "attacker.example:\(port)")
            #expect(delete.status == 403, "DELETE with Host attacker.example: \(delete.status) \(delete.text)")
            #expect(errorOf(delete)?.code == "writes_need_token", "\(delete.text)")
            #expect(try Client.get("/lists/rebind", port: port, headers: [("Accept", "application/json")]).status == 200, "the list is still there")

            let metrics = try Wire.request("GET", "/metrics", port: port, host: "attacker.example:\(port)")
            #expect(metrics.status == 403, "GET /metrics with Host attacker.example: \(metrics.status) \(metrics.text)")
            #expect(errorOf(metrics)?.code == "metrics_need_token", "\(metrics.text)")

            let guarded = try LiveServer(arguments: ["--write-token", "s3cret"])
            defer { guarded.stop(); guarded.removeData() }
            let withToken = try Wire.request("PUT", "/lists/rebind", port: guarded.port, host: "attacker.example:\(guarded.port)",
                                             headers: [("Authorization", "Bearer s3cret")], json: body)
            #expect(withToken.status == 201, "with the write token the Host does not matter: \(withToken.status) \(withToken.text)")
        }
    }

    /// 7. Texts and ids are compared as bytes: canonically equivalent spellings are different values.
    @Test func textsAndIdsAreComparedAsBytes() async throws {
        try await offThePool {
            let server = try LiveServer()
            defer { server.stop(); server.removeData() }
            let precomposed = try Client.put("/lists/canon", port: server.port, json: #"{"sections":[{"id":"s","cells":[{"id":"c","text":"\u00e9"}]}]}"#)
            #expect(precomposed.status == 201, "\(precomposed.status) \(precomposed.text)")
            let firstVersion = try #require(objectOf(precomposed)?["version"] as? Int, "\(precomposed.text)")
            let decomposed = try Client.put("/lists/canon", port: server.port, json: #"{"sections":[{"id":"s","cells":[{"id":"c","text":"e\u0301"}]}]}"#)
            #expect(decomposed.status == 200, "\(decomposed.status) \(decomposed.text)")
            let secondVersion = objectOf(decomposed)?["version"] as? Int
            #expect(secondVersion == firstVersion + 1, "e + U+0301 is a new version: \(decomposed.text)")
            #expect(operationsOf(decomposed).contains { $0.op == "reload" && $0.cell == "c" }, "cell c is reloaded: \(decomposed.text)")

            let precomposedID = try Client.put("/lists/canonid", port: server.port, json: #"{"sections":[{"id":"s","cells":[{"id":"\u00e9","text":"x"}]}]}"#)
            #expect(precomposedID.status == 201, "\(precomposedID.status) \(precomposedID.text)")
            let decomposedID = try Client.put("/lists/canonid", port: server.port, json: #"{"sections":[{"id":"s","cells":[{"id":"e\u0301","text":"x"}]}]}"#)
            #expect(decomposedID.status == 200, "\(decomposedID.status) \(decomposedID.text)")
            let ops = operationsOf(decomposedID).map { $0.op }
            #expect(!ops.isEmpty && ops.contains("delete") && ops.contains("insert"), "two keys: a delete and an insert, got \(ops): \(decomposedID.text)")
        }
    }

    /// 8. Actions are paced per client: past the burst, 429 with `Retry-After`, and no more are taken
    /// than the rate allows.
    @Test func actionsArePaced() async throws {
        try await offThePool {
            let server = try LiveServer(arguments: ["--action-rate", "5", "--action-burst", "10"])
            defer { server.stop(); server.removeData() }
            let session = try pageSession("todo", port: server.port)
            let before = try versionOf("todo", port: server.port)
            var taken = 0
            var limited = 0
            var other: [Int] = []
            var badRetry: [String] = []
            let started = Date()
            for _ in 0 ..< 100 {
                let answer = try todoAction(["type": "toggle", "cell": "2"], port: server.port, session: session)
                switch answer.status {
                case 204:
                    taken += 1
                case 429:
                    limited += 1
                    let retry = answer.header("Retry-After") ?? ""
                    if (Int(retry) ?? 0) <= 0 || errorOf(answer)?.code != "too_many_actions" {
                        badRetry.append("Retry-After \(retry.debugDescription): \(answer.text)")
                    }
                default:
                    other.append(answer.status)
                }
            }
            let elapsed = Date().timeIntervalSince(started)
            #expect(other.isEmpty, "only 204 and 429: \(other)")
            #expect(badRetry.isEmpty, "every 429 has a positive Retry-After and too_many_actions: \(badRetry.prefix(3))")
            #expect(limited >= 1, "100 actions at once met the limit")
            #expect(taken >= 1, "the burst is taken")
            #expect(Double(taken) <= 10 + 5 * elapsed + 1, "\(taken) actions taken in \(elapsed) s at 5/s with a burst of 10")
            let moved = try versionOf("todo", port: server.port) - before
            #expect(moved >= 0 && moved <= taken, "the version moved by \(moved), \(taken) actions were taken")
        }
    }
}
