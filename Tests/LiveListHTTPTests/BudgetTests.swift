#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import LiveListHTTP

/// Counts how often the body-reading handlers ran.
private final class Calls: Sendable {
    private let count = Locked(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}

/// `PUT /up` needs `Authorization: yes` and `Content-Type: application/json`, decided on the head;
/// `POST /open` takes any body.
private func uploadHandler(_ calls: Calls) -> HTTPHandler {
    var router = Router()
    router.add(.PUT, "/up", HTTPHandler.sync { request in
        calls.add()
        return .text("stored \(request.body.count)")
    }.checkingHeads { head in
        guard head.headers["Authorization"] == "yes" else {
            return HTTPResponse.error(HTTPError(.unauthorized, code: "unauthorized", detail: "no"))
        }
        guard head.contentMediaType == "application/json" else {
            return HTTPResponse.error(HTTPError(.unsupportedMediaType, code: "unsupported_media_type", detail: "json"))
        }
        return nil
    })
    router.on(.POST, "/open") { request in
        calls.add()
        return .text("got \(request.body.count)")
    }
    return router.handler
}

@Suite struct HeadDecisionTests {
    /// The regression: a refused upload was read whole (8 MiB) and `100 Continue` was sent first.
    @Test(arguments: EventLoopBackend.available) func refusalsAreAnsweredFromTheHeadWithoutContinueOrBody(backend: EventLoopBackend) async throws {
        let calls = Calls()
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.limits.body = 1 << 20
        try await withServer(configuration, handler: uploadHandler(calls)) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                var results: [String] = []
                let heads = [
                    "PUT /up HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 900000\r\n\r\n",
                    "PUT /up HTTP/1.1\r\nHost: t\r\nAuthorization: yes\r\nContent-Type: ;\r\nExpect: 100-continue\r\nContent-Length: 900000\r\n\r\n",
                    "PUT /nowhere HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 900000\r\n\r\n",
                    "DELETE /up HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n",
                    "PUT /up HTTP/1.1\r\nHost: t\r\nAuthorization: yes\r\nExpect: 100-continue\r\nContent-Length: 2000000\r\n\r\n",
                ]
                for head in heads {
                    guard let client = TestClient(port: port) else { return ["connect failed"] }
                    client.send(head)
                    let response = client.readResponse()
                    results.append("\(response?.status ?? 0) \(response?.header("Connection") ?? "-") \(response?.header("Allow") ?? "-") \(client.waitForClose())")
                }
                // Without Expect: the client sends a part of its body at once; the answer still comes
                // from the head, and the rest is never read into memory.
                if let client = TestClient(port: port) {
                    client.send("PUT /up HTTP/1.1\r\nHost: t\r\nContent-Length: 900000\r\n\r\n" + String(repeating: "x", count: 4096))
                    let response = client.readResponse()
                    results.append("\(response?.status ?? 0) \(response?.header("Connection") ?? "-") \(client.waitForClose())")
                }
                return results
            }
            #expect(results == [
                "401 close - true", "415 close - true", "404 close - true", "405 close PUT true", "413 close - true",
                "401 close true",
            ])
            #expect(calls.value == 0, "no handler ran")
            #expect(server.statistics.refusedBeforeBody == 5)
            #expect(server.bodyBytesHeld == 0)
        }
    }

    /// A head refused before its body is timed and numbered as a request is: the access log's duration
    /// and connection, and the request-duration histogram, read both from it.
    @Test(arguments: EventLoopBackend.available) func aHeadRefusedBeforeItsBodyCarriesItsArrivalAndConnection(backend: EventLoopBackend) async throws {
        let heads = Locked<[(receivedAt: UInt64, connection: UInt64)]>([])
        var router = Router()
        router.add(.PUT, "/up", HTTPHandler.sync { _ in .text("stored") }.checkingHeads { head in
            heads.withLock { $0.append((head.receivedAt, head.connectionID)) }
            return HTTPResponse.error(HTTPError(.unauthorized, code: "unauthorized", detail: "no"))
        })
        try await withServer(testConfiguration(loops: 1, backend: backend), handler: router.handler) { server in
            let status = await onThread { () -> Int in
                guard let client = TestClient(port: server.port) else { return 0 }
                client.send("PUT /up HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello")
                return client.readResponse()?.status ?? 0
            }
            #expect(status == 401)
        }
        let seen = heads.withLock { $0 }
        #expect(seen.count == 1)
        #expect(seen.allSatisfy { $0.receivedAt > 0 && $0.connection > 0 }, "\(seen)")
    }

    /// The regression: the body budget was reserved from `Content-Length` on any route, so requests
    /// that announced bodies and sent none (eight `GET /healthz` announcing 8 MiB) held it for everyone.
    @Test(arguments: EventLoopBackend.available) func bodiesPastTheirRoutesLimitAreRefusedFromTheHead(backend: EventLoopBackend) async throws {
        let calls = Calls()
        var router = Router()
        router.on(.GET, "/get") { _ in .text("got") }
        router.add(.POST, "/small", HTTPHandler.sync { request in
            calls.add()
            return .text("got \(request.body.count)")
        }.acceptingBodies(upTo: 10))
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.limits.body = 8 << 20
        configuration.requestBodyBudget = 1 << 20
        try await withServer(configuration, handler: router.handler) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                let requests = [
                    "GET /get HTTP/1.1\r\nHost: t\r\nContent-Length: 8388608\r\n\r\n",
                    "GET /get HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
                    "POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\n",
                    "POST /small HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\naaaaa\r\n6\r\nbbbbbb\r\n0\r\n\r\n",
                ]
                var results: [String] = []
                for request in requests {
                    guard let client = TestClient(port: port) else { return ["connect failed"] }
                    client.send(request)
                    let response = client.readResponse()
                    results.append("\(response?.status ?? 0) \(response?.text.contains("body_too_large") ?? false) \(client.waitForClose())")
                }
                for request in ["POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789", "GET /get HTTP/1.1\r\nHost: t\r\n\r\n"] {
                    guard let client = TestClient(port: port) else { return ["connect failed"] }
                    client.send(request)
                    results.append(client.readResponse()?.text ?? "-")
                }
                return results
            }
            #expect(results == ["413 true true", "413 true true", "413 true true", "413 true true", "got 10", "got"])
            #expect(calls.value == 1)
            #expect(server.bodyBytesHeld == 0)
        }
    }

    @Test func anAcceptedHeadGetsContinueAndItsBody() async throws {
        let calls = Calls()
        try await withServer(handler: uploadHandler(calls)) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                guard let client = TestClient(port: port) else { return [] }
                client.send("PUT /up HTTP/1.1\r\nHost: t\r\nAuthorization: yes\r\nContent-Type: application/json; charset=utf-8\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
                let interim = client.readResponse()
                client.send("{}")
                let final = client.readResponse()
                client.send("PUT /up HTTP/1.1\r\nHost: t\r\nAuthorization: yes\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1;a=b\r\nx\r\n0\r\n\r\n")
                let chunked = client.readResponse()
                return ["\(interim?.status ?? 0)", "\(final?.status ?? 0) \(final?.text ?? "")", "\(chunked?.status ?? 0) \(chunked?.text ?? "")"]
            }
            #expect(results == ["100", "200 stored 2", "200 stored 1"])
            #expect(server.bodyBytesHeld == 0, "the budget is given back once answered")
        }
    }

    @Test(arguments: EventLoopBackend.available) func bodiesPastTheGlobalBudgetGet503UntilOthersAreAnswered(backend: EventLoopBackend) async throws {
        let calls = Calls()
        var configuration = testConfiguration(loops: 2, backend: backend)
        configuration.requestBodyBudget = 100_000
        try await withServer(configuration, handler: uploadHandler(calls)) { server in
            let port = server.port
            let results = await onThread { () -> [String] in
                var results: [String] = []
                guard let holder = TestClient(port: port) else { return ["connect failed"] }
                // 80,000 bytes announced, most of them sent: what arrived is reserved (in steps of
                // 64 KiB, never past the announced length) while the rest comes.
                holder.send("POST /open HTTP/1.1\r\nHost: t\r\nContent-Length: 80000\r\n\r\n" + String(repeating: "a", count: 70_000))
                var waited = 0
                while server.bodyBytesHeld < 80_000, waited < 2_000 { usleep(5_000); waited += 1 }
                if let refused = TestClient(port: port) {
                    // Announcing takes nothing: its head is accepted (100 Continue); its bytes, as
                    // they come, do not fit.
                    refused.send("POST /open HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 50000\r\n\r\n")
                    let interim = refused.readResponse()
                    refused.send(String(repeating: "r", count: 30_000))
                    let response = refused.readResponse()
                    results.append("\(interim?.status ?? 0) \(response?.status ?? 0) \(response?.header("Retry-After") ?? "-") \(refused.waitForClose())")
                }
                if let chunked = TestClient(port: port) {
                    // Chunked bodies are reserved as they arrive: 64 KiB at a time.
                    let chunk = String(repeating: "c", count: 30_000)
                    var text = "POST /open HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                    for _ in 0 ..< 3 { text += String(30_000, radix: 16) + "\r\n" + chunk + "\r\n" }
                    chunked.send(text)
                    let response = chunked.readResponse()
                    results.append("\(response?.status ?? 0) \(response?.header("Retry-After") ?? "-")")
                }
                holder.send(String(repeating: "a", count: 10_000))
                results.append(holder.readResponse()?.text ?? "-")
                if let after = TestClient(port: port) {
                    after.send("POST /open HTTP/1.1\r\nHost: t\r\nContent-Length: 50000\r\n\r\n" + String(repeating: "b", count: 50_000))
                    results.append(after.readResponse()?.text ?? "-")
                }
                return results
            }
            #expect(results == ["100 503 1 true", "503 1", "got 80000", "got 50000"])
            #expect(await eventually { server.bodyBytesHeld == 0 })
        }
    }
}

@Suite struct DescriptorTests {
    @Test func theConnectionCapLeavesDescriptorsForFiles() {
        var configuration = HTTPServerConfiguration()
        configuration.maxConnections = 20_000
        // The issue's case: a file limit equal to maxConnections left nothing for files.
        #expect(HTTPServer.connectionCap(configuration, fileLimit: 20_000, openNow: 30) == 20_000 - 30 - 1_000)
        #expect(HTTPServer.connectionCap(configuration, fileLimit: 1_024, openNow: 10) == 1_024 - 10 - 64)
        #expect(HTTPServer.connectionCap(configuration, fileLimit: 1_000_000, openNow: 10) == 20_000)
        #expect(HTTPServer.connectionCap(configuration, fileLimit: nil, openNow: 10) == 20_000)
        #expect(HTTPServer.connectionCap(configuration, fileLimit: 50, openNow: 40) == 1)
        configuration.fileDescriptorReserve = 200
        #expect(HTTPServer.connectionCap(configuration, fileLimit: 1_024, openNow: 0) == 824)
    }

    @Test func aRunningServerCapsItsConnectionsBelowTheFileLimit() async throws {
        var configuration = testConfiguration(loops: 1)
        configuration.maxConnections = Int.max
        try await withServer(configuration, handler: .sync { _ in .text("ok") }) { server in
            let limit = try #require(HTTPServer.fileLimit())
            #expect(server.maxConnections <= limit - 64 && server.maxConnections > 0)
        }
    }

    @Test func staticFileAnswersNeverShowTheServersPaths() async throws {
        var template = Array("/tmp/livelist-paths-XXXXXX".utf8CString)
        let root = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        mkdir(root + "/empty", 0o755)
        defer {
            rmdir(root + "/empty")
            rmdir(root)
        }
        let files = try #require(StaticFiles(directory: root))
        for path in ["/missing.js", "/empty", "/empty/", "/../../etc/passwd", "/.hidden"] {
            var headers = HTTPHeaders()
            headers.add("Host", "h")
            let segments = path.split(separator: "/").map(String.init)
            let response = await files.handler.respond(to: HTTPRequest(
                method: .GET, version: .http1_1, target: path, path: path, pathSegments: segments, query: [],
                headers: headers, body: [], trailers: HTTPHeaders(), keepAlive: true, host: "h"))
            guard case let .bytes(body) = response.body else { Issue.record("\(path): a stream, not an error page"); continue }
            let text = String(decoding: body, as: UTF8.self) + response.headers.map { $0.value }.joined()
            #expect(!text.contains(root) && !text.contains("/tmp"), "\(path): \(text)")
        }
        let post = files.handler.headCheck?(HTTPRequest(
            method: .POST, version: .http1_1, target: "/x", path: "/x", pathSegments: ["x"], query: [],
            headers: HTTPHeaders(), body: [], trailers: HTTPHeaders(), keepAlive: true, host: "h"))
        #expect(post?.status.code == 405 && post?.headers["Allow"] == "GET, HEAD")
    }
}

@Suite struct LargeEventTests {
    /// The regression: an event over the 1 MiB backlog limit ended the stream, so a large list's
    /// snapshot never arrived and EventSource reconnected forever.
    @Test(arguments: EventLoopBackend.available) func anEventOfAnySizeArrivesWhole(backend: EventLoopBackend) async throws {
        let book = StreamBook()
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.streamBacklogLimit = 64 * 1024
        try await withServer(configuration, handler: book.handler()) { server in
            let port = server.port
            let client = try #require(await onThread { TestClient(port: port) }, "no connection")
            let opened = await onThread { () -> String? in
                client.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n")
                _ = client.readResponse(head: true)
                return client.readStream { $0.contains("first") }
            }
            #expect(opened != nil)
            let stream = book.stream(0)
            let big = String(repeating: "0123456789abcdef", count: 3 << 16)  // 3 MiB
            #expect(stream.send(ServerSentEvent(id: "2", data: big)))
            let received = await onThread { client.readStream { $0.contains("\n\n") && $0.count > 3 << 20 } }
            #expect(received == "id: 2\ndata: \(big)\n\n")
            #expect(stream.send(ServerSentEvent(id: "3", data: "after")), "a reader that keeps up keeps its stream")
            let after = await onThread { client.readStream { $0.contains("after\n\n") } }
            #expect(after?.replacingPings == "id: 3\ndata: after\n\n")
            #expect(server.statistics.streamsOverflowed == 0)
        }
    }

    @Test(arguments: EventLoopBackend.available) func aSlowReaderIsCutBetweenEventsAndTheStreamEndsCleanly(backend: EventLoopBackend) async throws {
        let book = StreamBook()
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.streamBacklogLimit = 128 * 1024
        try await withServer(configuration, handler: book.handler()) { server in
            let port = server.port
            // The client reads nothing until the stream is cut (a normal receive buffer, so that
            // reading what was queued afterwards is quick).
            guard let client = await openEventStreams(1, port: port, book: book)?.first else { return }
            let stream = book.stream(0)
            let payload = String(repeating: "y", count: 10_000)
            var accepted = 0
            while accepted < 100_000, stream.send(ServerSentEvent(id: "\(accepted + 2)", data: payload)) {
                accepted += 1
                if accepted % 16 == 0 { try await Task.sleep(for: .milliseconds(1)) }
            }
            #expect(accepted < 100_000)
            #expect(await eventually { book.logged("closed 0 backlogExceeded") })
            // What was queued arrives, then the body's end: the last event is whole, so the client
            // resumes from its id.
            let (text, ended) = await onThread { () -> (String, Bool) in
                _ = client.readResponse(head: true)
                return client.readStreamToEnd()
            }
            #expect(ended, "the body ends with its last chunk, not a reset")
            let events = text.replacingPings.components(separatedBy: "\n\n").dropLast()
            #expect(text.hasSuffix("\n\n") && events.count >= 3)
            for (index, event) in events.dropFirst(2).enumerated() {
                #expect(event == "id: \(index + 2)\ndata: \(payload)", "event \(index + 2) is whole")
            }
            #expect(server.statistics.streamsOverflowed == 1)
        }
    }

    @Test(arguments: EventLoopBackend.available) func stalledReadersTogetherStayWithinTheServersStreamBudget(backend: EventLoopBackend) async throws {
        let book = StreamBook()
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.streamBacklogLimit = 1 << 20
        configuration.streamOutputBudget = 256 * 1024
        try await withServer(configuration, handler: book.handler()) { server in
            let port = server.port
            // Four readers that read nothing.
            guard let clients = await openEventStreams(4, port: port, book: book, shrinkReceiveBuffer: true) else { return }
            // The kernel takes megabytes per socket before anything waits in the process: write
            // until a write is refused (bounded: 4 x 4,000 events of 8 KB at most).
            let payload = String(repeating: "z", count: 8_000)
            var peak = 0
            for round in 0 ..< 4_000 where server.statistics.streamWritesDeferred == 0 {
                for index in 0 ..< 4 {
                    _ = book.stream(index).send(ServerSentEvent(id: "\(round)", data: payload))
                }
                peak = max(peak, server.streamBytesQueued)
                if round % 8 == 0 { try await Task.sleep(for: .milliseconds(1)) }
            }
            // Each stream alone stayed under its own limit (1 MiB); together they were held at the
            // budget, by refusing writes: the node is overloaded, and no stream is cut for it.
            #expect(peak <= 256 * 1024 + 4 * 8_100, "queued for all streams at once: \(peak)")
            #expect(server.statistics.streamWritesDeferred >= 1)
            #expect(server.statistics.streamsOverflowed == 0)
            #expect((0 ..< 4).allSatisfy { !book.stream($0).isClosed }, "no reader was cut")
            withExtendedLifetime(clients) {}
        }
        #expect(book.count == 4)
    }

    /// One event stream on a server whose stream budget is `budget`, its head read and nothing queued.
    private func withOneStream(budget: Int, _ body: (HTTPServer, HTTPStream, TestClient) async throws -> Void) async throws {
        let book = StreamBook()
        var configuration = testConfiguration(loops: 1)
        configuration.streamOutputBudget = budget
        try await withServer(configuration, handler: book.handler()) { server in
            guard let client = await openEventStreams(1, port: server.port, book: book)?.first else { return }
            let stream = book.stream(0)
            _ = await onThread { client.readResponse(head: true) }
            #expect(await eventually { stream.queuedBytes == 0 })
            try await body(server, stream, client)
        }
    }

    @Test func aStreamThatKeepsUpGetsEventsAsLargeAsTheBudget() async throws {
        try await withOneStream(budget: 60_000) { server, stream, client in
            #expect(stream.send(ServerSentEvent(id: "9", data: String(repeating: "b", count: 50_000))))
            let text = await onThread { client.readStream { $0.contains("id: 9\n") && $0.hasSuffix("\n\n") } }
            #expect(text?.contains(String(repeating: "b", count: 50_000)) == true)
            #expect(await eventually { server.streamBytesQueued == 0 }, "delivered bytes leave the budget")
        }
    }

    /// The regression: a stream with nothing queued took any event, so streams that each got a large
    /// event of their own (a reset) were never held to the budget. Refused, the stream stays open.
    @Test func aStreamsOwnEventCountsEvenWhenItsQueueIsEmpty() async throws {
        try await withOneStream(budget: 1_000) { server, stream, client in
            // A small event (a heartbeat's size) always goes to a stream with nothing queued.
            #expect(stream.send(ServerSentEvent(id: "1", data: "small")))
            #expect(await eventually { stream.queuedBytes == 0 })
            // One larger than the whole budget is refused; the stream stays open, and its writer hears
            // when there is room (at once: nothing else is held).
            #expect(!stream.send(ServerSentEvent(id: "2", data: String(repeating: "b", count: 50_000))))
            #expect(!stream.isClosed)
            #expect(server.streamBytesQueued == 0)
            let room = Locked(false)
            stream.whenDrained { room.withLock { $0 = true } }
            #expect(await eventually { room.withLock { $0 } })
            #expect(stream.send(ServerSentEvent(id: "3", data: "small")))
            #expect(server.statistics.streamWritesDeferred == 1 && server.statistics.streamsClosed.isEmpty)
            withExtendedLifetime(client) {}
        }
    }

    /// Bytes that several streams queue (`SharedBytes`) count once in the budget, however many
    /// stalled readers hold them, and leave it when the last one ends.
    @Test(arguments: EventLoopBackend.available) func sharedBytesCountOnceForEveryStreamThatHoldsThem(backend: EventLoopBackend) async throws {
        let book = StreamBook()
        var configuration = testConfiguration(loops: 1, backend: backend)
        configuration.streamBacklogLimit = 16 << 20
        configuration.streamOutputBudget = 12 << 20
        try await withServer(configuration, handler: book.handler()) { server in
            let port = server.port
            guard var clients = await openEventStreams(8, port: port, book: book, shrinkReceiveBuffer: true) else { return }
            // 8 MiB shared by 8 stalled readers: 64 MiB if each counted its own, 8 MiB counted once.
            let shared = SharedBytes(ServerSentEvent(id: "1", data: String(repeating: "s", count: 8 << 20)).encoded)
            for index in 0 ..< 8 {
                #expect(book.stream(index).write([], shared: shared), "stream \(index) takes the shared bytes")
            }
            #expect(server.streamBytesQueued <= (8 << 20) + 8 * 64, "counted once: \(server.streamBytesQueued)")
            #expect(server.streamBytesQueued >= (8 << 20) / 2, "counted at all: \(server.streamBytesQueued)")
            // Bytes of each stream's own still count for it: 8 MiB more for one stream does not fit.
            #expect(!book.stream(0).write(Array(repeating: 0x61, count: 8 << 20)))
            #expect(server.statistics.streamsOverflowed <= 1)
            clients.removeAll()  // closes their sockets
            #expect(await eventually { server.streamBytesQueued == 0 }, "the last stream gives them back")
        }
    }
}

