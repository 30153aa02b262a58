@_spi(Benchmarks) import LiveListHTTP

/// The request parser's fuzzing entry point (`Scripts/fuzz-parser.sh`), kept out of the shipped library.
///
/// It feeds the input to one parser whole and to another in two pieces (split where the first byte
/// says), and stops the process when they disagree: the parser must give the same requests and the
/// same refusal for any split of the same bytes. Anything else that goes wrong (a trap, an overflow,
/// an endless loop) the fuzzer reports itself.
enum ParserFuzzing {
    /// Small limits, so that the fuzzer reaches them.
    static let limits: HTTPParserLimits = {
        var limits = HTTPParserLimits()
        limits.requestLine = 256
        limits.headerBlock = 1_024
        limits.headerCount = 16
        limits.body = 4_096
        limits.chunkLine = 64
        return limits
    }()

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        var whole = RequestParser(limits: limits)
        whole.append(contentsOf: bytes)
        let expected = drain(&whole)

        let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        var pieces = RequestParser(limits: limits)
        pieces.append(contentsOf: bytes[..<split])
        var got = drain(&pieces)
        if got.last?.hasPrefix("error") != true {
            pieces.append(contentsOf: bytes[split...])
            got += drain(&pieces)
        }
        if got != expected {
            fatalError("the parser's answer depends on the split at \(split): \(expected) whole, \(got) in pieces")
        }
    }

    /// The events until the parser needs more bytes or refuses, as comparable summaries.
    private static func drain(_ parser: inout RequestParser) -> [String] {
        var events: [String] = []
        for _ in 0 ..< 1_000 {
            switch parser.next() {
            case .needMore:
                return events
            case .continueExpected:
                continue
            case let .head(request, contentLength):
                events.append("head \(request.method) \(request.target) \(contentLength ?? -1)")
            case let .request(request):
                events.append("\(request.method) \(request.target) \(request.headers.fields.count) \(request.body.count) \(request.keepAlive)")
            case let .error(error):
                events.append("error \(error.status.code) \(error.code)")
                return events
            }
        }
        fatalError("the parser yielded 1,000 events without needing more bytes")
    }
}
