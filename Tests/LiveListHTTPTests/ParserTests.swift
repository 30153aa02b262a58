import Testing
@_spi(Benchmarks) @testable import LiveListHTTP
import LiveListTestSupport

/// What the parser made of an input: one line per request or error, in order.
private func outcomes(_ pieces: [[UInt8]], limits: HTTPParserLimits = HTTPParserLimits()) -> [String] {
    var parser = RequestParser(limits: limits)
    var results: [String] = []
    loop: for piece in pieces {
        parser.append(contentsOf: piece)
        while true {
            switch parser.next() {
            case .needMore: continue loop
            case .continueExpected: results.append("100-continue")
            case .head: continue
            case .request(let request): results.append(summary(request))
            case .error(let error):
                results.append("error \(error.status.code)")
                break loop
            }
        }
    }
    return results
}

private func summary(_ request: HTTPRequest) -> String {
    let query = request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    let headers = request.headers.map { "\($0.name):\($0.value)" }.joined(separator: "|")
    let trailers = request.trailers.map { "\($0.name):\($0.value)" }.joined(separator: "|")
    return "\(request.method.rawValue) \(request.path) ?\(query) v=\(request.version == .http1_1 ? "1.1" : "1.0") "
        + "host=\(request.host) keep=\(request.keepAlive) body=\(String(decoding: request.body, as: UTF8.self)) "
        + "h=[\(headers)] t=[\(trailers)]"
}

/// Feeds `input` whole, split at every point, and byte by byte; every way must agree.
private func parseEverySplit(_ text: String, limits: HTTPParserLimits = HTTPParserLimits()) -> [String] {
    let bytes = Array(text.utf8)
    let whole = outcomes([bytes], limits: limits)
    // Every split point; for large inputs the first and last 64 and 40 in between (time bound).
    let splits = bytes.count <= 2048 ? Array(1..<bytes.count)
        : Array(1..<64) + Array(stride(from: 64, to: bytes.count - 64, by: bytes.count / 40)) + Array((bytes.count - 64)..<bytes.count)
    for split in splits {
        let parts = outcomes([Array(bytes[..<split]), Array(bytes[split...])], limits: limits)
        #expect(parts.filter { $0 != "100-continue" } == whole.filter { $0 != "100-continue" }, "split at \(split)")
    }
    let single = outcomes(bytes.map { [$0] }, limits: limits)
    #expect(single.filter { $0 != "100-continue" } == whole.filter { $0 != "100-continue" }, "byte by byte")
    return whole
}

@Suite struct ParserTests {
    @Test func simpleGet() {
        let result = parseEverySplit("GET /index.html HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n")
        #expect(result == ["GET /index.html ? v=1.1 host=example.com keep=true body= h=[Host:example.com|Accept:*/*] t=[]"])
    }

    @Test func contentLengthBody() {
        let result = parseEverySplit("POST /submit HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world")
        #expect(result == ["POST /submit ? v=1.1 host=h keep=true body=hello world h=[Host:h|Content-Length:11] t=[]"])
    }

    @Test func chunkedBodyWithExtensionsAndTrailers() {
        let text = "PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\n6 ; ext\r\n world\r\n4;a=\"q \\\"x\\\" ;\";b;c = d\r\n0123\r\n6\r\n456789\r\n0\r\nX-Checksum: abc\r\n\r\n"
        let result = parseEverySplit(text)
        #expect(result == ["PUT /x ? v=1.1 host=h keep=true body=hello world0123456789 h=[Host:h|Transfer-Encoding:chunked] t=[X-Checksum:abc]"])
    }

    @Test func pipelinedRequestsInOrder() {
        let text = "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"
            + "POST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
            + "HEAD /3 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
        let result = parseEverySplit(text)
        #expect(result.count == 3)
        #expect(result[0].hasPrefix("GET /1 "))
        #expect(result[1].hasPrefix("POST /2 ") && result[1].contains("body=abc"))
        #expect(result[2].hasPrefix("HEAD /3 ") && result[2].contains("keep=false"))
    }

    @Test func keepAliveRulesForBothVersions() {
        #expect(parseEverySplit("GET / HTTP/1.0\r\n\r\n")[0].contains("keep=false"))
        #expect(parseEverySplit("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")[0].contains("keep=true"))
        #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade, close\r\n\r\n")[0].contains("keep=false"))
        #expect(parseEverySplit("GET / HTTP/1.1\r\nHost: h\r\n\r\n")[0].contains("keep=true"))
        #expect(parseEverySplit("GET / HTTP/1.2\r\nHost: h\r\n\r\n")[0].contains("v=1.1"))
    }

    @Test func absoluteFormOverridesHost() {
        let result = parseEverySplit("GET http://Example.org:8080/a/b?x=1 HTTP/1.1\r\nHost: other\r\n\r\n")
        #expect(result[0].hasPrefix("GET /a/b ?x=1 v=1.1 host=Example.org:8080 "))
        let bare = parseEverySplit("GET https://example.org HTTP/1.1\r\nHost: example.org\r\n\r\n")
        #expect(bare[0].hasPrefix("GET / ? "))
    }

    @Test func percentDecodingNormalisationAndQuery() {
        let result = parseEverySplit("GET /a/./b/../c%20d//e/?q=a+b%26c&flag&x=%E2%9C%93 HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(result[0].hasPrefix("GET /a/c d/e/ ?q=a b&c&flag=&x=✓ "))
        let escape = parseEverySplit("GET /../../%2e%2e/etc/passwd HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(escape[0].hasPrefix("GET /etc/passwd ? "))
    }

    @Test func pathSegmentsAreDecoded() {
        var parser = RequestParser()
        parser.append(contentsOf: Array("GET /lists/my%20list/events HTTP/1.1\r\nHost: h\r\n\r\n".utf8))
        guard case .request(let request) = parser.next() else {
            Issue.record("no request")
            return
        }
        #expect(request.pathSegments == ["lists", "my list", "events"])
        #expect(request.target == "/lists/my%20list/events")
    }

    /// The path is its segments joined (with the target's trailing slash), whether it was taken from
    /// the target as it stood (already normal) or joined again: for random targets made of the
    /// pieces that matter (dots, empty segments, escapes, trailing slashes), printed with their seed.
    @Test func thePathIsAlwaysItsSegmentsJoined() {
        let seed = UInt64.random(in: 1 ... .max)
        print("thePathIsAlwaysItsSegmentsJoined seed \(seed)")
        var random = SplitMix64(seed: seed)
        let pieces = ["a", "bc", ".", "..", "", "%2e", "%2E%2e", "x%20y", ".a", "a.", "~", "%41"]
        for _ in 0 ..< 3_000 {
            var target = ""
            for _ in 0 ..< Int(random.next() % 5) {
                target += "/" + pieces[Int(random.next() % UInt64(pieces.count))]
            }
            if target.isEmpty || random.next() % 3 == 0 { target += "/" }
            let decoded: DecodedTarget
            switch TargetDecoder.decode(Array(target.utf8), method: .GET) {
            case .success(let value): decoded = value
            case .failure(let error):
                Issue.record("seed \(seed): \(target) refused: \(error.detail)")
                continue
            }
            let joined = "/" + decoded.segments.joined(separator: "/")
            let expected = joined + (decoded.segments.isEmpty || !decoded.path.hasSuffix("/") ? "" : "/")
            #expect(decoded.path == expected, "seed \(seed): \(target)")
            #expect(!decoded.segments.contains { $0.isEmpty || $0 == "." || $0 == ".." }, "seed \(seed): \(target)")
            // Normal form is a fixed point.
            if case .success(let again) = TargetDecoder.decode(Array(decoded.path.utf8), method: .GET) {
                #expect(again.path == decoded.path && again.segments == decoded.segments, "seed \(seed): \(target)")
            }
            // A trailing slash survives exactly when the target had one after a kept segment.
            let lastPiece = target.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
            if decoded.segments.isEmpty {
                #expect(decoded.path == "/", "seed \(seed): \(target)")
            } else if lastPiece.isEmpty {
                #expect(decoded.path.hasSuffix("/"), "seed \(seed): \(target)")
            }
        }
    }

    /// Decoded path segments, queries and form values become text as `String(validating:)` makes it:
    /// the same string for valid UTF-8, nil for anything else (lone continuation bytes, truncated or
    /// overlong sequences, surrogates), on fixed cases and on random bytes printed with their seed.
    @Test func decodedBytesBecomeTextOnlyWhenValidUTF8() async {
        let fixed: [[UInt8]] = [
            [], Array("plain-ascii_~.".utf8), Array("é✓😀".utf8), [0x80], [0xFF], [0xC3], [0xE2, 0x9C],
            [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0x61, 0xF4, 0x90, 0x80, 0x80], [0x7F, 0x00, 0x41],
        ]
        for bytes in fixed {
            #expect(TargetDecoder.utf8String(bytes[...]) == String(validating: bytes, as: UTF8.self), "\(bytes)")
        }
        #expect(TargetDecoder.utf8String(Array("a%C3%A9b".utf8)[...]) == "a%C3%A9b")
        #expect(TargetDecoder.utf8String([0xC3, 0xA9][...]) == "é")
        let seed = UInt64.random(in: 1 ... .max)
        print("decodedBytesBecomeTextOnlyWhenValidUTF8 seed \(seed)")
        var random = SplitMix64(seed: seed)
        let alphabet: [UInt8] = [0x41, 0x7E, 0x80, 0xBF, 0xC3, 0xA9, 0xE2, 0x9C, 0x93, 0xF0, 0x9F, 0x98, 0x80, 0xFF]
        for round in 0 ..< 5_000 {
            if round % 500 == 0 { await Task.yield() }  // leave the cooperative pool to other suites' servers
            let bytes = (0 ..< Int(random.next() % 9)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            // A slice that does not start at index 0, as the decoder passes them.
            let padded = [0x2F] + bytes
            #expect(TargetDecoder.utf8String(padded[1...]) == String(validating: bytes, as: UTF8.self), "seed \(seed): \(bytes)")
        }
    }

    @Test func expectContinueIsReportedBeforeTheBody() {
        var parser = RequestParser()
        parser.append(contentsOf: Array("POST /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n".utf8))
        guard case let .head(head, length) = parser.next(), head.path == "/u", head.body.isEmpty, length == 2 else {
            Issue.record("expected the head first")
            return
        }
        guard case .continueExpected = parser.next() else {
            Issue.record("expected continue")
            return
        }
        guard case .needMore = parser.next() else {
            Issue.record("expected needMore")
            return
        }
        parser.append(contentsOf: Array("ok".utf8))
        guard case .request(let request) = parser.next() else {
            Issue.record("expected request")
            return
        }
        #expect(request.body == Array("ok".utf8))
        // HTTP/1.0 ignores the expectation; no body means nothing to continue.
        #expect(parseEverySplit("POST /u HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx").count == 1)
        #expect(outcomes([Array("GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n".utf8)]).count == 1)
    }

    @Test func theHeadOfEveryRequestWithABodyComesFirst() {
        var parser = RequestParser()
        parser.append(contentsOf: Array("PUT /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
        guard case let .head(head, length) = parser.next(), head.method == .PUT, head.headers["Host"] == "h", length == nil else {
            Issue.record("expected the head of the chunked request")
            return
        }
        #expect(parser.isReadingBody)
        parser.append(contentsOf: Array("2\r\nok\r\n0\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n".utf8))
        guard case let .request(request) = parser.next(), request.body == Array("ok".utf8) else {
            Issue.record("expected the request")
            return
        }
        // A request without a body has no separate head.
        guard case let .request(get) = parser.next(), get.path == "/b" else {
            Issue.record("expected the GET")
            return
        }
    }

    @Test(arguments: [
        ("", true), (";a", true), (";a=b", true), (" ; a = b ; c", true), (";a=\"x y\"", true), (";a=\"\\\"\"", true),
        ("\t;\ta\t=\t\"\"", true), (";a=b;c=\"d;e\"", true),
        (";", false), (";a=\"b", false), (" ", false), (";a b=c", false), (";a ", false), (";a=b ", false), (";=b", false),
        (";a=", false), ("x", false), (";a=b c", false), (";a=\"b\"c", false), (";a=\"\\", false), (";a=\"\u{01}\"", false),
        (";a;;b", false), (";a==b", false), (";a=(b)", false),
    ])
    func chunkExtensionsFollowRFC9112(_ extensionText: String, _ valid: Bool) {
        #expect(RequestParser.isChunkExtension(Array(extensionText.utf8)[...]) == valid, "\(extensionText.debugDescription)")
        let request = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\(extensionText)\r\nok\r\n0\r\n\r\n"
        let outcome = parseEverySplit(request)
        #expect(outcome.last?.hasPrefix("error") == !valid, "\(outcome)")
        if !valid { #expect(outcome == ["error 400"]) }
    }

    @Test func leadingEmptyLineIsIgnored() {
        #expect(parseEverySplit("\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n").count == 1)
    }

    @Test func limitsAreConfigurable() {
        var limits = HTTPParserLimits()
        limits.requestLine = 64
        limits.headerBlock = 128
        limits.headerCount = 3
        limits.body = 10
        let longTarget = "GET /" + String(repeating: "a", count: 100) + " HTTP/1.1\r\nHost: h\r\n\r\n"
        #expect(parseEverySplit(longTarget, limits: limits) == ["error 414"])
        let manyHeaders = "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"
        #expect(parseEverySplit(manyHeaders, limits: limits) == ["error 431"])
        let bigHeader = "GET / HTTP/1.1\r\nHost: h\r\nA: " + String(repeating: "x", count: 200) + "\r\n\r\n"
        #expect(parseEverySplit(bigHeader, limits: limits) == ["error 431"])
        #expect(parseEverySplit("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world", limits: limits) == ["error 413"])
        let chunked = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n6\r\nworld!\r\n0\r\n\r\n"
        #expect(parseEverySplit(chunked, limits: limits) == ["error 413"])
    }

    @Test func idleAndBodyStates() {
        var parser = RequestParser()
        #expect(parser.isIdle)
        parser.append(contentsOf: Array("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nab".utf8))
        guard case .head = parser.next(), case .needMore = parser.next() else {
            Issue.record("expected needMore")
            return
        }
        #expect(!parser.isIdle)
        #expect(parser.isReadingBody)
    }

    @Test(arguments: HostileFixture.all)
    func hostileRequestIsRefused(_ fixture: HostileFixture) {
        let result = parseEverySplit(fixture.request)
        #expect(result.last == "error \(fixture.status)", "\(fixture.name): \(result)")
    }

    @Test func thereAreEnoughHostileFixtures() {
        #expect(HostileFixture.all.count >= 40)
        #expect(Set(HostileFixture.all.map(\.name)).count == HostileFixture.all.count)
    }
}

/// A malformed or hostile request and the status it must get.
struct HostileFixture: Sendable, CustomTestStringConvertible {
    let name: String
    let request: String
    let status: Int

    var testDescription: String { name }

    static let all: [HostileFixture] = [
        // Framing: request smuggling vectors.
        .init(name: "cl-and-te", request: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400),
        .init(name: "te-and-cl", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", status: 400),
        .init(name: "differing-cl", request: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", status: 400),
        .init(name: "differing-cl-list", request: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 4\r\n\r\nabcd", status: 400),
        .init(name: "negative-cl", request: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", status: 400),
        .init(name: "plus-cl", request: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\nabc", status: 400),
        .init(name: "hex-cl", request: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x3\r\n\r\nabc", status: 400),
        .init(name: "empty-cl", request: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n", status: 400),
        .init(name: "huge-cl", request: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", status: 400),
        .init(name: "cl-over-limit", request: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 999999999\r\n\r\n", status: 413),
        .init(name: "te-not-chunked-last", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", status: 400),
        .init(name: "te-identity", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n", status: 400),
        .init(name: "te-chunked-twice", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400),
        .init(name: "te-unknown-before-chunked", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", status: 501),
        .init(name: "te-in-http10", request: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400),
        .init(name: "te-xchunked", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\n\r\n", status: 400),
        // Chunked bodies.
        .init(name: "chunk-size-not-hex", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", status: 400),
        .init(name: "chunk-size-empty", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", status: 400),
        .init(name: "chunk-size-overflow", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF\r\n", status: 400),
        .init(name: "chunk-size-negative", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n", status: 400),
        .init(name: "chunk-size-0x", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", status: 400),
        .init(name: "chunk-data-too-long", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n", status: 400),
        .init(name: "chunk-bare-lf", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n", status: 400),
        .init(name: "chunk-ext-control", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;a=\u{01}\r\nabc\r\n0\r\n\r\n", status: 400),
        .init(name: "chunk-ext-empty", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2;\r\nab\r\n0\r\n\r\n", status: 400),
        .init(name: "chunk-ext-open-quote", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2;a=\"b\r\nab\r\n0\r\n\r\n", status: 400),
        .init(name: "chunk-size-trailing-space", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2 \r\nab\r\n0\r\n\r\n", status: 400),
        .init(name: "chunk-ext-space-in-name", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2;a b=c\r\nab\r\n0\r\n\r\n", status: 400),
        .init(name: "chunk-ext-too-long", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;" + String(repeating: "a", count: 5000) + "\r\nabc\r\n0\r\n\r\n", status: 400),
        .init(name: "chunk-over-limit", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n10000000\r\n", status: 413),
        .init(name: "trailer-content-length", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 5\r\n\r\n", status: 400),
        .init(name: "trailer-obs-fold", request: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: a\r\n b\r\n\r\n", status: 400),
        // Line endings and whitespace.
        .init(name: "obs-fold", request: "GET / HTTP/1.1\r\nHost: h\r\nX-Long: a\r\n  continued\r\n\r\n", status: 400),
        .init(name: "space-before-first-header", request: "GET / HTTP/1.1\r\n Host: h\r\n\r\n", status: 400),
        .init(name: "space-before-colon", request: "GET / HTTP/1.1\r\nHost : h\r\n\r\n", status: 400),
        .init(name: "tab-before-colon", request: "GET / HTTP/1.1\r\nHost\t: h\r\n\r\n", status: 400),
        .init(name: "bare-cr-in-header", request: "GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", status: 400),
        .init(name: "bare-lf-header", request: "GET / HTTP/1.1\r\nHost: h\n\r\n", status: 400),
        .init(name: "bare-lf-request-line", request: "GET / HTTP/1.1\nHost: h\r\n\r\n", status: 400),
        .init(name: "bare-cr-request-line", request: "GET /\r HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "no-colon", request: "GET / HTTP/1.1\r\nHost: h\r\nNoColonHere\r\n\r\n", status: 400),
        .init(name: "empty-field-name", request: "GET / HTTP/1.1\r\nHost: h\r\n: value\r\n\r\n", status: 400),
        .init(name: "bad-char-in-name", request: "GET / HTTP/1.1\r\nHost: h\r\nX(y): 1\r\n\r\n", status: 400),
        .init(name: "nul-in-value", request: "GET / HTTP/1.1\r\nHost: h\r\nX: a\u{00}b\r\n\r\n", status: 400),
        .init(name: "control-in-value", request: "GET / HTTP/1.1\r\nHost: h\r\nX: a\u{07}b\r\n\r\n", status: 400),
        .init(name: "del-in-value", request: "GET / HTTP/1.1\r\nHost: h\r\nX: a\u{7F}b\r\n\r\n", status: 400),
        // Request line.
        .init(name: "lowercase-method", request: "get / HTTP/1.1\r\nHost: h\r\n\r\n", status: 501),
        .init(name: "unknown-method", request: "BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n", status: 501),
        .init(name: "connect-method", request: "CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", status: 501),
        .init(name: "method-not-token", request: "G(T / HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "long-method", request: String(repeating: "A", count: 9000) + " / HTTP/1.1\r\nHost: h\r\n\r\n", status: 501),
        .init(name: "double-space", request: "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "trailing-space", request: "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", status: 400),
        .init(name: "missing-version", request: "GET /\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "http-09", request: "GET / HTTP/0.9\r\n\r\n", status: 505),
        .init(name: "http-2", request: "GET / HTTP/2.0\r\nHost: h\r\n\r\n", status: 505),
        .init(name: "http-3", request: "GET / HTTP/3.0\r\nHost: h\r\n\r\n", status: 505),
        .init(name: "lowercase-http", request: "GET / http/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "version-garbage", request: "GET / HTTP/1.1x\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "version-two-digits", request: "GET / HTTP/11.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "long-target", request: "GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: h\r\n\r\n", status: 414),
        .init(name: "target-non-ascii", request: "GET /caf\u{E9} HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "target-control", request: "GET /a\u{01}b HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "target-relative", request: "GET index.html HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "asterisk-not-options", request: "GET * HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "bad-percent", request: "GET /a%zz HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "truncated-percent", request: "GET /a%2 HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "encoded-slash", request: "GET /a%2fb HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "encoded-backslash", request: "GET /a%5c..%5cb HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "encoded-nul", request: "GET /a%00.html HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "invalid-utf8-path", request: "GET /%ff%fe HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "fragment", request: "GET /a#frag HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "absolute-userinfo", request: "GET http://user@h/ HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "bad-query-encoding", request: "GET /a?x=%zz HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        .init(name: "too-many-empty-lines", request: "\r\n\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", status: 400),
        // Host.
        .init(name: "missing-host", request: "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", status: 400),
        .init(name: "two-hosts", request: "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400),
        .init(name: "host-with-space", request: "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", status: 400),
        .init(name: "host-with-slash", request: "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", status: 400),
        .init(name: "host-with-userinfo", request: "GET / HTTP/1.1\r\nHost: user@a\r\n\r\n", status: 400),
        // Sizes and expectations.
        .init(name: "huge-header", request: "GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "a", count: 40000) + "\r\n\r\n", status: 431),
        .init(name: "too-many-headers", request: "GET / HTTP/1.1\r\nHost: h\r\n" + (0..<120).map { "X-\($0): v\r\n" }.joined() + "\r\n", status: 431),
        .init(name: "unknown-expectation", request: "POST / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx", status: 417),
    ]
}
