@testable import LiveListHTTP
import LiveListTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing

@Suite struct CompressionTests {
    @Test(arguments: [
        ("gzip", true), ("gzip;q=0", false), ("gzip; q=0.5", true), ("deflate, gzip", true), ("br", false),
        ("*", true), ("*;q=0", false), ("*, gzip;q=0", false), ("identity", false), ("GZIP", true), ("x-gzip", true),
        // A combining mark after a comma does not hide it: lists are cut at bytes.
        ("gzip,\u{301}", true), ("gzip;q=1,\u{301}", true), ("br,\u{301}gzip", false), ("gzip;q=\u{301}1", false),
    ])
    func acceptEncodingIsNegotiated(header: String, accepted: Bool) {
        #expect(acceptsGzip(header) == accepted)
    }

    /// The fast path for headers without weights answers as the general one does, over random lists of
    /// codings made of the letters that matter, spaces, tabs, commas and a few other bytes.
    @Test func unweightedHeadersAreJudgedAsTheGeneralPathJudgesThem() {
        let seed = UInt64.random(in: 0 ... .max)
        print("unweightedHeadersAreJudgedAsTheGeneralPathJudgesThem seed \(seed)")
        var random = SplitMix64(seed: seed)
        let alphabet: [Character] = ["g", "z", "i", "p", "G", "Z", "I", "P", "x", "X", "-", "*", " ", "\t", ",", ",", "a", "é", "\u{301}"]
        let words = ["gzip", "x-gzip", "*", "GZip", "deflate", "br", "identity", " gzip ", "\tgzip", "gzip,", "gz ip", "x-gzip\t"]
        var disagreements: [String] = []
        for _ in 0 ..< 5_000 {
            var header = ""
            for _ in 0 ..< Int.random(in: 0 ... 6, using: &random) {
                if Bool.random(using: &random) {
                    header += words.randomElement(using: &random)!
                } else {
                    header.append(alphabet.randomElement(using: &random)!)
                }
            }
            if acceptsGzip(header) != acceptsGzipByWeight(header) { disagreements.append(header.debugDescription) }
        }
        #expect(disagreements.isEmpty, "seed \(seed): \(disagreements.prefix(5))")
    }

    @Test func gzipRoundTrips() throws {
        let text = Array(String(repeating: "<li data-cell=\"x\">Hello, 世界 👋</li>", count: 200).utf8)
        let compressed = try #require(gzip(text))
        #expect(compressed.count < text.count / 5)
        #expect(compressed.prefix(2) == [0x1F, 0x8B], "a gzip member")
        #expect(gunzip(compressed) == text)
        #expect(gunzip([1, 2, 3]) == nil)
    }

    private func request(_ acceptEncoding: String?) -> HTTPRequest {
        var headers = HTTPHeaders()
        if let acceptEncoding { headers.add("Accept-Encoding", acceptEncoding) }
        return HTTPRequest(method: .GET, version: .http1_1, target: "/", path: "/", pathSegments: [], query: [],
                           headers: headers, body: [], trailers: HTTPHeaders(), keepAlive: true, host: "h")
    }

    @Test func onlyCompressibleLargeWholeBodiesAreCompressed() throws {
        let body = Array(String(repeating: "{\"a\":1}", count: 400).utf8)
        let cache = CompressionCache(limit: 1 << 20)
        let options = Compression()
        var json = HTTPResponse.json(body)
        json.headers.set("ETag", "\"7\"")

        let compressed = compress(json, for: request("gzip"), options: options, cache: cache)
        #expect(compressed.headers["Content-Encoding"] == "gzip")
        #expect(compressed.headers["Vary"] == "Accept-Encoding")
        #expect(compressed.headers["ETag"] == "\"7-gzip\"")
        guard case let .bytes(bytes) = compressed.body else { Issue.record("not bytes"); return }
        #expect(gunzip(bytes) == body)
        #expect(cache.counts == (0, 0), "bodies under cacheMinimumSize without a key are not kept")

        let plain = compress(json, for: request(nil), options: options, cache: cache)
        #expect(plain.headers["Content-Encoding"] == nil && plain.headers["Vary"] == "Accept-Encoding")
        let small = compress(HTTPResponse.json(Array("{}".utf8)), for: request("gzip"), options: options, cache: cache)
        #expect(small.headers["Content-Encoding"] == nil)
        var png = HTTPResponse(body: body)
        png.headers.set("Content-Type", "image/png")
        #expect(compress(png, for: request("gzip"), options: options, cache: cache).headers["Content-Encoding"] == nil)
        let error = HTTPResponse(status: .notFound, headers: ["Content-Type": "application/json"], body: body)
        #expect(compress(error, for: request("gzip"), options: options, cache: cache).headers["Content-Encoding"] == nil)
    }

    @Test func cacheIsBoundedInBytesAndDropsTheLeastRecentlyUsed() {
        let cache = CompressionCache(limit: 10)
        func key(_ name: String) -> CompressionCache.Key { .init(source: .named(name), length: 100) }
        cache.put(key("a"), [1, 2, 3, 4])
        cache.put(key("b"), [1, 2, 3, 4])
        #expect(cache.get(key("a")) != nil, "a is now the most recently used")
        cache.put(key("c"), [1, 2, 3, 4])
        #expect(cache.get(key("b")) == nil && cache.get(key("a")) != nil && cache.get(key("c")) != nil)
        cache.put(key("huge"), Array(repeating: 0, count: 11))
        #expect(cache.get(key("huge")) == nil)
        cache.put(key("a"), [9])
        #expect(cache.get(key("a")) == [9], "replaced")
        #expect(cache.get(CompressionCache.Key(source: .named("a"), length: 99)) == nil, "another length is another key")
        // Many more entries than fit: stays bounded and consistent (the slab reuses freed slots).
        for index in 0 ..< 10_000 { cache.put(key("k\(index)"), [UInt8(index & 0xFF), 0, 0]) }
        #expect(cache.get(key("k9999")) == [UInt8(9999 & 0xFF), 0, 0])
        #expect(cache.get(key("k9990")) == nil)
    }

    private func request(_ path: String, _ fields: [(String, String)]) -> HTTPRequest {
        var headers = HTTPHeaders()
        for (name, value) in fields { headers.add(name, value) }
        let segments = path.split(separator: "/").map(String.init)
        return HTTPRequest(method: .GET, version: .http1_1, target: path, path: path, pathSegments: segments, query: [],
                           headers: headers, body: [], trailers: HTTPHeaders(), keepAlive: true, host: "h")
    }

    /// The regression of the cross-list leak: answers of two lists at the same version ("5") once
    /// shared one cache entry, so one list's changeset was served for the other.
    @Test(arguments: [2_000, 40_000])
    func twoBodiesWithOneETagOnDifferentPathsNeverShareTheirGzip(size: Int) async throws {
        var router = Router()
        router.on(.GET, "/lists/:name") { request in
            let name = request.pathParameters["name"] ?? ""
            let text = "{\"list\":\"\(name)\",\"cells\":[" + String(repeating: "\"\(name)\",", count: size / (name.count + 3)) + "0]}"
            var response = HTTPResponse.json(Array(text.utf8))
            response.headers.set("ETag", "\"5\"")
            return response
        }
        let handler = router.handler.compressed()
        for round in 0 ..< 3 {
            for name in ["gz0", "gz1", "gz22"] {
                let response = await handler.respond(to: request("/lists/\(name)", [("Accept-Encoding", "gzip")]))
                guard case let .bytes(bytes) = response.body else { Issue.record("not bytes"); return }
                #expect(response.headers["Content-Encoding"] == "gzip")
                let text = String(decoding: gunzip(bytes) ?? [], as: UTF8.self)
                #expect(text.hasPrefix("{\"list\":\"\(name)\""), "round \(round): \(name) got \(text.prefix(20))")
            }
        }
    }

    @Test func namedKeysAndLargeBodiesAreCompressedOncePerContent() throws {
        let cache = CompressionCache(limit: 1 << 20)
        let options = Compression()
        let big = Array(String(repeating: "<li>cell</li>", count: 5_000).utf8)
        let other = Array(String(repeating: "<li>cell</li>", count: 4_999).utf8) + Array("<li>xxxx</li>".utf8)
        for _ in 0 ..< 3 { _ = compress(HTTPResponse.html(big), for: request("/a", [("Accept-Encoding", "gzip")]), options: options, cache: cache) }
        #expect(cache.counts == (2, 1), "the same bytes are compressed once")
        let answer = compress(HTTPResponse.html(other), for: request("/a", [("Accept-Encoding", "gzip")]), options: options, cache: cache)
        guard case let .bytes(bytes) = answer.body else { Issue.record("not bytes"); return }
        #expect(gunzip(bytes) == other, "other bytes are another entry")
        // A named key: reused without hashing, but never for a body of another length.
        var named = HTTPResponse.html(Array(big.prefix(2_000)))
        named.compressionKey = "static /x \"1\""
        _ = compress(named, for: request("/x", [("Accept-Encoding", "gzip")]), options: options, cache: cache)
        var changed = HTTPResponse.html(Array(big.prefix(3_000)))
        changed.compressionKey = "static /x \"1\""
        let second = compress(changed, for: request("/x", [("Accept-Encoding", "gzip")]), options: options, cache: cache)
        guard case let .bytes(secondBytes) = second.body else { Issue.record("not bytes"); return }
        #expect(gunzip(secondBytes) == Array(big.prefix(3_000)))
    }

    @Test func theGzipETagAnswers304WithTheSameVary() async throws {
        var template = Array("/tmp/livelist-gzip-XXXXXX".utf8CString)
        let root = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        defer {
            unlink(root + "/app.js")
            unlink(root + "/logo.png")
            rmdir(root)
        }
        for (name, count) in [("app.js", 3_000), ("logo.png", 3_000)] {
            let fd = open(root + "/" + name, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            let bytes = Array(String(repeating: "console.log(1);", count: count / 15).utf8)
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        let files = try #require(StaticFiles(directory: root))
        let handler = files.handler.compressed()
        let first = await handler.respond(to: request("/app.js", [("Accept-Encoding", "gzip")]))
        let gzipETag = try #require(first.headers["ETag"])
        #expect(gzipETag.hasSuffix("-gzip\"") && first.headers["Vary"] == "Accept-Encoding")
        let again = await handler.respond(to: request("/app.js", [("Accept-Encoding", "gzip"), ("If-None-Match", gzipETag)]))
        #expect(again.status.code == 304)
        #expect(again.headers["ETag"] == gzipETag && again.headers["Vary"] == "Accept-Encoding")
        #expect(again.headers["Cache-Control"] == first.headers["Cache-Control"])
        let weak = await handler.respond(to: request("/app.js", [("Accept-Encoding", "gzip"), ("If-None-Match", "\"other\", W/\(gzipETag)")]))
        #expect(weak.status.code == 304)
        // The identity representation's ETag: 304 too, with the Vary of its 200.
        let plain = await handler.respond(to: request("/app.js", []))
        let plainETag = try #require(plain.headers["ETag"])
        #expect(plain.headers["Vary"] == "Accept-Encoding" && plain.headers["Content-Encoding"] == nil)
        let plain304 = await handler.respond(to: request("/app.js", [("If-None-Match", plainETag)]))
        #expect(plain304.status.code == 304 && plain304.headers["Vary"] == "Accept-Encoding")
        // A client without gzip that holds the gzip ETag gets the identity body.
        let noGzip = await handler.respond(to: request("/app.js", [("If-None-Match", gzipETag)]))
        #expect(noGzip.status.code == 200 && noGzip.headers["Content-Encoding"] == nil)
        // Types never compressed have no Vary on their 200 nor on their 304.
        let png = await handler.respond(to: request("/logo.png", [("Accept-Encoding", "gzip")]))
        let pngETag = try #require(png.headers["ETag"])
        let png304 = await handler.respond(to: request("/logo.png", [("Accept-Encoding", "gzip"), ("If-None-Match", pngETag)]))
        #expect(png.headers["Vary"] == nil && png304.status.code == 304 && png304.headers["Vary"] == nil)
    }
}
