#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import LiveListHTTP
import LiveListTestSupport
import Testing

/// The answers made once and sent many times (PreparedResponse, prepared header fields, the static
/// files' ready answers) against the path that builds every answer afresh: same status, fields and
/// bytes, for every encoding, validator and method.
@Suite struct PreparedResponseTests {
    private func request(
        _ fields: [(String, String)] = [], method: HTTPMethod = .GET, path: String = "/", query: [(String, String)] = []
    ) -> HTTPRequest {
        var headers = HTTPHeaders()
        for (name, value) in fields { headers.add(name, value) }
        let segments = path.split(separator: "/").map(String.init)
        return HTTPRequest(method: method, version: .http1_1, target: path, path: path, pathSegments: segments, query: query.map { ($0.0, $0.1) },
                           headers: headers, body: [], trailers: HTTPHeaders(), keepAlive: true, host: "h")
    }

    /// What a client receives: the encoded head (without Date) and the body.
    private func wire(_ response: HTTPResponse, head: Bool = false) -> [UInt8] {
        var bytes = ResponseEncoder.head(response, contentLength: nil, chunked: false, close: false, keepAliveHeader: false,
                                         date: Array("D".utf8), server: [], capacity: 0)
        if !head, case let .bytes(body) = response.body { bytes += body }
        return bytes
    }

    private static let body = Array(String(repeating: "<li class=\"cell\">Hello, 世界</li>\n", count: 120).utf8)

    private static var jsonResponse: HTTPResponse {
        var response = HTTPResponse.json(Array(String(repeating: "{\"a\":1},", count: 300).utf8))
        response.headers.set("Vary", "Accept")
        response.headers.set("Cache-Control", "no-store")
        response.headers.set("ETag", "\"12\"")
        return response
    }

    @Test(arguments: [nil, "gzip", "gzip, deflate, br", "br", "gzip;q=0", "*", "identity"])
    func aPreparedResponseIsWhatCompressionMakes(acceptEncoding: String?) throws {
        let prepared = PreparedResponse(Self.jsonResponse)
        let fields = acceptEncoding.map { [("Accept-Encoding", $0)] } ?? []
        let fast = prepared.response(for: request(fields))
        let slow = compress(Self.jsonResponse, for: request(fields), options: Compression(), cache: CompressionCache(limit: 1 << 20))
        #expect(fast.encodedFields != nil, "the fields are encoded once")
        #expect(wire(fast) == wire(slow))
        #expect(fast.status == slow.status)
        // And compression in front changes nothing.
        let again = compress(fast, for: request(fields), options: Compression(), cache: CompressionCache(limit: 1 << 20))
        #expect(wire(again) == wire(slow))
        if acceptsGzip(acceptEncoding) {
            #expect(fast.headers["Content-Encoding"] == "gzip")
            #expect(fast.headers["ETag"] == "\"12-gzip\"")
            guard case let .bytes(compressed) = fast.body, case let .bytes(original) = Self.jsonResponse.body else { Issue.record("no body"); return }
            #expect(gunzip(compressed) == original)
        }
    }

    @Test func theGzipValidatorGetsTheSame304() {
        let prepared = PreparedResponse(Self.jsonResponse)
        for tag in ["\"12-gzip\"", "W/\"12-gzip\"", "*", "\"1\", \"12-gzip\""] {
            for method in [HTTPMethod.GET, .HEAD] {
                let fields = [("Accept-Encoding", "gzip"), ("If-None-Match", tag)]
                let fast = prepared.response(for: request(fields, method: method))
                let slow = compress(Self.jsonResponse, for: request(fields, method: method), options: Compression(), cache: CompressionCache(limit: 1 << 20))
                #expect(fast.status.code == 304, "\(tag)")
                #expect(wire(fast) == wire(slow), "\(tag)")
            }
        }
    }

    @Test func smallOrIncompressibleResponsesHaveNoGzipRepresentation() {
        #expect(PreparedResponse(HTTPResponse.json(Array("{}".utf8))).gzip == nil)
        #expect(PreparedResponse(HTTPResponse(headers: ["Content-Type": "image/png"], body: Self.body)).gzip == nil)
        let small = PreparedResponse(HTTPResponse.text("ok\n"))
        #expect(small.identity.headers["Vary"] == "Accept-Encoding")
    }

    @Test func changingThePreparedFieldsDropsTheirEncoding() {
        var response = HTTPResponse.html(Self.body).prepared()
        #expect(response.encodedFields != nil)
        response.body = .bytes([1])
        #expect(response.encodedFields != nil, "a new body keeps the head")
        response.headers.add("Set-Cookie", "a=b")
        #expect(response.encodedFields == nil)
        #expect(wire(response) == wire(response.prepared()))
        // CR and LF are dropped from prepared fields too.
        var split = HTTPResponse.text("x")
        split.headers.set("X-A", "1\r\nX-B: 2")
        #expect(wire(split.prepared()) == wire(split))
        #expect(!String(decoding: wire(split.prepared()), as: UTF8.self).contains("\r\nX-B"))
    }

    @Test func aFieldAddedToPreparedFieldsIsEncodedAsTheWholeWouldBe() {
        var response = HTTPResponse.html(Self.body)
        response.headers.set("Cache-Control", "no-store")
        var prepared = response.prepared()
        prepared.addField("Set-Cookie", "s=1; Path=/")
        prepared.addField("X-Split", "a\r\nX-Injected: 1")
        #expect(prepared.encodedFields != nil, "the encoding is kept, with the fields appended")
        var plain = response
        plain.headers.add("Set-Cookie", "s=1; Path=/")
        plain.headers.add("X-Split", "a\r\nX-Injected: 1")
        #expect(prepared.headers.fields.map { "\($0.name): \($0.value)" } == plain.headers.fields.map { "\($0.name): \($0.value)" })
        #expect(wire(prepared) == wire(plain))
        #expect(!String(decoding: wire(prepared), as: UTF8.self).contains("\r\nX-Injected"))
        var unprepared = response
        unprepared.addField("Set-Cookie", "s=1; Path=/")
        #expect(unprepared.encodedFields == nil, "nothing is encoded that was not")
    }

    /// Every answer of a file kept in memory, fast (no validators) and slow (validators that do not
    /// match, which take the comparing path), through the compression layer.
    @Test func memoryFilesAnswerAsTheSlowPathDoes() async throws {
        let files = MemoryFiles(["/app.js": Self.body, "/tiny.txt": Array("hi".utf8)])
        let handler = files.handler.compressed()
        for path in ["/app.js", "/tiny.txt"] {
            for query in [[], [("v", "abc")]] {
                for encoding in [nil, "gzip", "br"] {
                    for method in [HTTPMethod.GET, .HEAD] {
                        var fields = encoding.map { [("Accept-Encoding", $0)] } ?? []
                        let fast = await handler.respond(to: request(fields, method: method, path: path, query: query))
                        fields.append(("If-None-Match", "\"nothing\""))
                        let slow = await handler.respond(to: request(fields, method: method, path: path, query: query))
                        #expect(fast.status.code == 200)
                        #expect(wire(fast, head: method == .HEAD) == wire(slow, head: method == .HEAD), "\(path) \(query) \(encoding ?? "-") \(method)")
                        if encoding == "gzip", path == "/app.js", case let .bytes(compressed) = fast.body {
                            #expect(fast.headers["Content-Encoding"] == "gzip")
                            #expect(gunzip(compressed) == Self.body)
                        }
                    }
                }
            }
        }
        // The validators still give 304s, in both encodings.
        let plain = await handler.respond(to: request(path: "/app.js"))
        let etag = try #require(plain.headers["ETag"])
        #expect(await handler.respond(to: request([("If-None-Match", etag)], path: "/app.js")).status.code == 304)
        let zipped = await handler.respond(to: request([("Accept-Encoding", "gzip")], path: "/app.js"))
        let gzipETag = try #require(zipped.headers["ETag"])
        #expect(gzipETag == gzipVariant(etag))
        let notModified = await handler.respond(to: request([("Accept-Encoding", "gzip"), ("If-None-Match", gzipETag)], path: "/app.js"))
        #expect(notModified.status.code == 304)
        #expect(notModified.headers["Vary"] == "Accept-Encoding")
    }

    /// Pieces deflated once with bytes spliced between them decode to the whole, whatever the sizes
    /// (empty pieces and fillers, a filler longer than one stored block).
    ///
    /// Long and CPU-bound: it yields between rounds, so that it never holds the cooperative pool (as
    /// many threads as cores) away from the tests that run a server in this process.
    @Test func splicedGzipDecodesToTheWhole() async throws {
        let seed = UInt64.random(in: 1 ... 1_000_000)
        print("splicedGzipDecodesToTheWhole seed \(seed)")
        var generator = SplitMix64(seed: seed)
        let alphabet = Array("<li>ab c</li>\n".utf8)
        func bytes(_ count: Int) -> [UInt8] {
            (0 ..< count).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
        }
        for _ in 0 ..< 40 {
            await Task.yield()
            let pieceCount = Int.random(in: 1 ... 4, using: &generator)
            let pieces = (0 ..< pieceCount).map { _ in bytes([0, 1, 100, 5_000].randomElement(using: &generator)!) }
            let spliced = try #require(SplicedGzip(pieces: pieces))
            for _ in 0 ..< 3 {
                let fillers = (0 ..< pieceCount - 1).map { _ in bytes([0, 64, 70_000].randomElement(using: &generator)!) }
                var whole = pieces[0]
                for (index, filler) in fillers.enumerated() { whole += filler + pieces[index + 1] }
                let zipped = spliced.gzip(fillers: fillers)
                #expect(gunzip(zipped) == whole, "\(pieces.map(\.count)) \(fillers.map(\.count))")
            }
        }
    }

    /// The same for a directory's files once they are kept in memory: the ready answers against the
    /// path that reads the cache entry's fields afresh.
    @Test func directoryFilesAnswerAsTheSlowPathDoes() async throws {
        var template = Array("/tmp/livelist-prepared-XXXXXX".utf8CString)
        let root = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        defer {
            unlink(root + "/app.js")
            rmdir(root)
        }
        let fd = open(root + "/app.js", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        _ = Self.body.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        var files = try #require(StaticFiles(directory: root))
        files.cacheMinimumAge = 0
        let handler = files.handler.compressed()
        _ = await handler.respond(to: request(path: "/app.js"))
        #expect(files.cache.count == 1, "kept in memory")
        for query in [[], [("v", "abc")]] {
            for encoding in [nil, "gzip", "br"] {
                for method in [HTTPMethod.GET, .HEAD] {
                    var fields = encoding.map { [("Accept-Encoding", $0)] } ?? []
                    let fast = await handler.respond(to: request(fields, method: method, path: "/app.js", query: query))
                    fields.append(("If-None-Match", "\"nothing\""))
                    let slow = await handler.respond(to: request(fields, method: method, path: "/app.js", query: query))
                    #expect(fast.status.code == 200)
                    #expect(fast.encodedFields != nil, "a ready answer")
                    #expect(wire(fast, head: method == .HEAD) == wire(slow, head: method == .HEAD), "\(query) \(encoding ?? "-") \(method)")
                }
            }
        }
    }

    @Test func mappedSynchronousHandlersStaySynchronous() async {
        let sync = HTTPHandler.sync { _ in HTTPResponse.text("a") }.mapResponses { _, response in
            var response = response
            response.headers.set("X", "1")
            return response
        }
        var probe = request()
        guard case .response = sync.outcome(&probe) else { Issue.record("a task per request"); return }
        #expect(await sync.respond(to: request()).headers["X"] == "1")
        let async = HTTPHandler.async { _ in HTTPResponse.text("b") }.mapResponses { _, response in response }
        guard case .async = async.outcome(&probe) else { Issue.record("not async"); return }
        var router = Router()
        router.on(.GET, "/s") { _ in HTTPResponse.text("s") }
        let routed = router.handler.compressed()
        var routedProbe = request(path: "/s")
        guard case .response = routed.outcome(&routedProbe) else { Issue.record("the router's sync route became async"); return }
        #expect(routed.headCheck != nil, "the head check is kept")
    }

    @Test(arguments: [
        ("Accept", "accept-encoding", false), ("Accept, Accept-Encoding", "accept-encoding", true),
        ("ACCEPT-ENCODING", "accept-encoding", true), ("x accept-encodinG y", "accept-encoding", true),
        ("accept-encodin", "accept-encoding", false), ("", "accept-encoding", false), ("aaccept-encoding", "accept-encoding", true),
    ])
    func caseBlindSearch(text: String, wanted: String, found: Bool) {
        #expect(containsIgnoringCase(text, "accept-encoding") == found)
    }

    /// The one-pass cookie scan against the obvious split-and-trim reading, on random headers.
    @Test func cookieScanMatchesTheReference() {
        let seed = UInt64.random(in: 1 ... 1_000_000)
        print("cookieScanMatchesTheReference seed \(seed)")
        var generator = SplitMix64(seed: seed)
        let alphabet = Array("ab=; \t=;xé".unicodeScalars).map(String.init)
        for _ in 0 ..< 3_000 {
            let length = Int.random(in: 0 ... 24, using: &generator)
            let header = (0 ..< length).map { _ in alphabet.randomElement(using: &generator)! }.joined()
            for name in ["a", "b", "ab", "x", ""] {
                #expect(HeaderParsing.cookie(name, in: [header]) == referenceCookie(name, header), "\(header.debugDescription) \(name)")
            }
        }
    }

    private func referenceCookie(_ name: String, _ header: String) -> String? {
        for pair in header.split(separator: ";") {
            guard let equals = pair.firstIndex(of: "=") else { continue }
            if pair[..<equals].trimmingSpaces == name {
                return String(pair[pair.index(after: equals)...].trimmingSpaces)
            }
        }
        return nil
    }
}
