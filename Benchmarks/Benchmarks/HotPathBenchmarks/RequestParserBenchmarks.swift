// RequestParser: the server's incremental HTTP/1.1 parser, one parser kept across iterations as a
// keep-alive connection keeps it; each iteration appends the bytes of what a client sent and takes every
// request out with next().
//
//   GET              a browser's GET of a list's event stream with 10 header fields
//   pipelined        16 or 128 such GETs (N and 8N) arriving in one read
//   chunked PUT      a PUT of a JSON body of 64 KiB or 512 KiB in chunks of 4 KiB

import Benchmark
@_spi(Benchmarks) import LiveListHTTP

func requestParserBenchmarks() {
    Benchmark(
        "RequestParser GET, 10 header fields",
        configuration: hotPathConfiguration(iterations: 20_000)
    ) { (benchmark: Benchmark, connection: ParsingConnection) throws in
        let bytes = connection.inputs[benchmark.currentIteration % connection.inputs.count]
        for _ in benchmark.scaledIterations {
            try connection.parse(bytes)
        }
    } setup: {
        try ParsingConnection(inputs: (0 ..< 16).map { browserGET($0) }, requests: 1)
    }

    for count in [16, 128] {
        Benchmark(
            "RequestParser pipelined \(count) GETs",
            configuration: hotPathConfiguration(iterations: 5_000)
        ) { (benchmark: Benchmark, connection: ParsingConnection) throws in
            let bytes = connection.inputs[benchmark.currentIteration % connection.inputs.count]
            for _ in benchmark.scaledIterations {
                try connection.parse(bytes)
            }
        } setup: {
            let batches = (0 ..< 4).map { batch in (0 ..< count).flatMap { browserGET(batch * count + $0) } }
            return try ParsingConnection(inputs: batches, requests: count)
        }
    }

    for kibibytes in [64, 512] {
        Benchmark(
            "RequestParser chunked PUT, \(kibibytes) KiB",
            configuration: hotPathConfiguration(iterations: 2_000)
        ) { (benchmark: Benchmark, connection: ParsingConnection) throws in
            let bytes = connection.inputs[benchmark.currentIteration % connection.inputs.count]
            for _ in benchmark.scaledIterations {
                try connection.parse(bytes)
            }
        } setup: {
            try ParsingConnection(inputs: (0 ..< 4).map { chunkedPUT(kibibytes: kibibytes, variant: $0) }, requests: 1)
        }
    }
}

/// A browser's GET of a list's event stream, numbered `index` in its path, cookie and Last-Event-ID.
func browserGET(_ index: Int) -> [UInt8] {
    let head = "GET /lists/todo-\(index % 7)/events?since=\(index)&window=100 HTTP/1.1\r\n"
        + "Host: localhost:8080\r\n"
        + "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36\r\n"
        + "Accept: text/event-stream\r\n"
        + "Accept-Language: en-GB,en;q=0.9,fr;q=0.8\r\n"
        + "Accept-Encoding: gzip, deflate, br, zstd\r\n"
        + "Cache-Control: no-cache\r\n"
        + "Connection: keep-alive\r\n"
        + "Referer: http://localhost:8080/lists/todo-\(index % 7)\r\n"
        + "Cookie: livelist_session=\(String(UInt64(index) &* 0x9E37_79B9_7F4A_7C15, radix: 16)); theme=dark\r\n"
        + "Last-Event-ID: \(index)\r\n"
        + "\r\n"
    return Array(head.utf8)
}

/// A PUT of a list's JSON body of `kibibytes` KiB, chunked 4 KiB at a time.
func chunkedPUT(kibibytes: Int, variant: Int) -> [UInt8] {
    var bytes = Array(("PUT /lists/todo-\(variant) HTTP/1.1\r\nHost: localhost:8080\r\n"
            + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n").utf8)
    let cell = Array("{\"id\":\"c\(variant)\",\"text\":\"Task \(variant): buy milk\"},".utf8)
    var body: [UInt8] = []
    body.reserveCapacity(kibibytes * 1024)
    while body.count < kibibytes * 1024 {
        body += cell
    }
    body.removeLast(body.count - kibibytes * 1024)
    for start in stride(from: 0, to: body.count, by: 4096) {
        let chunk = body[start ..< min(body.count, start + 4096)]
        bytes += Array((String(chunk.count, radix: 16) + "\r\n").utf8)
        bytes += chunk
        bytes += [0x0D, 0x0A]
    }
    bytes += Array("0\r\n\r\n".utf8)
    return bytes
}

/// One parser kept across iterations, and inputs that each hold `requests` whole requests.
final class ParsingConnection {
    let inputs: [[UInt8]]
    private let requests: Int
    private var parser = RequestParser()

    init(inputs: [[UInt8]], requests: Int) throws {
        self.inputs = inputs
        self.requests = requests
        for input in inputs {
            try parse(input)
        }
    }

    /// Parses `bytes`, which must hold `requests` whole requests and nothing more.
    func parse(_ bytes: [UInt8]) throws {
        parser.append(contentsOf: bytes)
        var parsed = 0
        while true {
            switch parser.next() {
            case .needMore:
                try expect(parsed == requests, "parsed \(parsed) of \(requests) requests")
                return
            case .head, .continueExpected:
                continue
            case let .request(request):
                blackHole(request)
                parsed += 1
            case let .error(error):
                throw FixtureError(description: "the parser refused the input: \(error)")
            }
        }
    }
}
