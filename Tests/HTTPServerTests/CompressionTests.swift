@testable import HTTPServer
import Testing

@Suite struct CompressionTests {
    @Test(arguments: [
        ("gzip", true), ("gzip;q=0", false), ("gzip; q=0.5", true), ("deflate, gzip", true), ("br", false),
        ("*", true), ("*;q=0", false), ("*, gzip;q=0", false), ("identity", false), ("GZIP", true), ("x-gzip", true),
    ])
    func acceptEncodingIsNegotiated(header: String, accepted: Bool) {
        #expect(acceptsGzip(header) == accepted)
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
        #expect(cache.get("\"7\"") == bytes, "kept by ETag")

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

    @Test func cacheIsBoundedInBytes() {
        let cache = CompressionCache(limit: 10)
        cache.put("a", [1, 2, 3, 4, 5, 6])
        cache.put("b", [1, 2, 3, 4, 5, 6])
        #expect(cache.get("a") == nil && cache.get("b") != nil)
        cache.put("huge", Array(repeating: 0, count: 11))
        #expect(cache.get("huge") == nil)
    }
}
