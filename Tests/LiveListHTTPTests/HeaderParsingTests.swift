@testable import LiveListHTTP
import LiveListTestSupport
import Testing

/// The generic parsers of request text: media types, cookies, q-values, forms and credentials.
@Suite struct HeaderParsingTests {
    @Test func mediaTypes() {
        for empty in ["", ";", ";;;", "\t", " ", " ; ", ";charset=utf-8"] {
            #expect(HTTPRequest.mediaType(ofContentType: empty) == nil, "\(empty)")
        }
        #expect(HTTPRequest.mediaType(ofContentType: "Application/JSON; charset=utf-8") == "application/json")
        #expect(HTTPRequest.mediaType(ofContentType: "\ttext/plain\t;") == "text/plain")
        // Cut at the ';' byte and trimmed of blank bytes, even where a combining mark (U+034B) makes
        // one Character of the ';' or the blank; U+037E (canonically equal to ';') does not cut.
        #expect(HTTPRequest.mediaType(ofContentType: "text/html;\u{34B}charset=x") == "text/html")
        #expect(HTTPRequest.mediaType(ofContentType: "text/html \u{34B}") == "text/html \u{34B}")
        #expect(HTTPRequest.mediaType(ofContentType: "text/html\u{37E}x") == "text/html\u{37E}x")
        #expect(HTTPRequest.mediaType(ofContentType: " \u{34B}; x") == "\u{34B}")
    }

    /// Field names compare ignoring ASCII case only, the same over contiguous bytes (native and small
    /// strings, substrings) as over any other view: checked against a byte-wise model on seeded
    /// random names, short and long, with non-ASCII letters whose case must not fold.
    @Test func fieldNamesCompareIgnoringASCIICaseOnly() {
        let seed = UInt64.random(in: 1 ... .max)
        print("fieldNamesCompareIgnoringASCIICaseOnly seed \(seed)")
        var random = SplitMix64(seed: seed)
        let letters = Array("aAbBzZ-_09é".unicodeScalars)
        func name() -> String {
            String(String.UnicodeScalarView((0 ..< Int(random.next() % 24)).map { _ in letters[Int(random.next() % UInt64(letters.count))] }))
        }
        func model(_ a: String, _ b: String) -> Bool {
            func fold(_ byte: UInt8) -> UInt8 { (0x41 ... 0x5A).contains(byte) ? byte | 0x20 : byte }
            return a.utf8.map(fold) == b.utf8.map(fold)
        }
        for _ in 0 ..< 5_000 {
            let a = name()
            let b = random.next() % 2 == 0 ? name() : String(a.map { random.next() % 2 == 0 ? Character($0.uppercased()) : $0 })
            #expect(HTTPHeaders.same(a, b) == model(a, b), "seed \(seed): \(a.debugDescription) vs \(b.debugDescription)")
            let padded = "x" + b + "y"
            let inner = padded.dropFirst().dropLast()
            #expect(HTTPHeaders.same(a, inner) == model(a, b), "seed \(seed): substring \(b.debugDescription)")
        }
        #expect(HTTPHeaders.same("Content-Length", "content-length"))
        #expect(!HTTPHeaders.same("É", "é"), "only ASCII letters fold")
        #expect(!HTTPHeaders.same("Host", "Hos"))
    }

    @Test func cookies() {
        #expect(HeaderParsing.cookie("a", in: ["a=1; b=2"]) == "1")
        #expect(HeaderParsing.cookie("b", in: ["a=1;b=2 "]) == "2")
        #expect(HeaderParsing.cookie("b", in: ["a=1", "b=3; b=4"]) == "3")
        #expect(HeaderParsing.cookie("a", in: ["a"]) == nil)
        #expect(HeaderParsing.cookie("a", in: ["a="]) == "")
        #expect(HeaderParsing.cookie("", in: ["=x"]) == "x")
        #expect(HeaderParsing.cookie("a", in: ["", ";", "=", ";;=;"]) == nil)
        #expect(HeaderParsing.cookie("a", in: ["a=b=c"]) == "b=c")
    }

    @Test func qValues() {
        #expect(HeaderParsing.qValue("0") == 0)
        #expect(HeaderParsing.qValue("1") == 1)
        #expect(HeaderParsing.qValue("0.") == 0)
        #expect(HeaderParsing.qValue("0.5") == 0.5)
        #expect(HeaderParsing.qValue("0.125") == 0.125)
        #expect(HeaderParsing.qValue("1.000") == 1)
        for bad in ["", "nan", "inf", "-1", "-0", "2", "1.5", "1.001", "0.1234", "0.5000", "1e0", "0x1", ".5", " 0.5", "0,5", "00.5", "１"] {
            #expect(HeaderParsing.qValue(bad) == nil, "\(bad)")
        }
        #expect(HeaderParsing.quality(of: "text", "html", in: "text/html;q=nan") == 0)
        #expect(HeaderParsing.quality(of: "text", "html", in: "text/html;q=0.3, */*;q=0.9") == 0.3)
        #expect(HeaderParsing.quality(of: "text", "html", in: "text/html;q=bad, */*;q=0.9") == 0.9, "the malformed range is ignored")
        #expect(HeaderParsing.quality(of: "text", "html", in: "text/*") == 1)
        #expect(HeaderParsing.quality(of: "text", "html", in: ",,;;/,/html,text/,*/") == 0)
    }

    @Test func forms() {
        #expect(HeaderParsing.form(Array("a=1&b=x+y&c=%41%42&d&=e&f=%&g=%4&%=h".utf8)) == ["a": "1", "b": "x y", "c": "AB", "d": "", "": "e"],
                "a field with a % that is not an escape is dropped, as the path and query decoder refuses it")
        #expect(HeaderParsing.form(Array("&&=&a==".utf8)) == ["": "", "a": "="])
        #expect(HeaderParsing.form(Array("%ff=1&ok=%ff&x=%e2%9c%93".utf8)) == ["x": "✓"], "fields that are not UTF-8 are dropped")
        #expect(HeaderParsing.formDecode(Array("%".utf8)[...]) == nil)
        #expect(HeaderParsing.formDecode(Array("%%41".utf8)[...]) == nil)
        #expect(HeaderParsing.formDecode(Array("%4".utf8)[...]) == nil)
        #expect(HeaderParsing.formDecode(Array("%25%41+".utf8)[...]) == "%A ")
        #expect(HeaderParsing.formDecode(Array("ab%41".utf8)[2...]) == "A", "a slice not starting at 0")
    }

    @Test func bearerCredentials() {
        #expect(HeaderParsing.bearerCredentials("Bearer abc") == "abc")
        #expect(HeaderParsing.bearerCredentials("bearer abc") == "abc")
        #expect(HeaderParsing.bearerCredentials("BeArEr   abc") == "abc")
        #expect(HeaderParsing.bearerCredentials("Bearer a b") == "a b", "compared whole, so it matches no token without spaces")
        for none in ["", "Bearer", "Bearer ", "Bearer   ", "Bearerabc", "Bearer\tabc", "Basic abc", "Bearers abc", "earer abc", " Bearer abc", "Bearer\u{301} abc"] {
            #expect(HeaderParsing.bearerCredentials(none) == nil, "\(none)")
        }
    }

    @Test func gzipIsAcceptedOnlyWithAValidWeight() {
        #expect(acceptsGzip("gzip"))
        #expect(acceptsGzip("br, gzip;q=0.5"))
        #expect(acceptsGzip("*"))
        #expect(!acceptsGzip("gzip;q=0"))
        #expect(!acceptsGzip("gzip;q=nan"), "not a q-value")
        #expect(!acceptsGzip("gzip;q=1e0"), "not a q-value")
        #expect(!acceptsGzip("identity, *;q=0"))
        #expect(!acceptsGzip(nil))
    }
}

/// The byte-scanning `HeaderParsing.quality` against the string-splitting parser it replaced, kept
/// here as the model: the same q for every value, made of the pieces that matter (types, stars,
/// slashes, commas, semicolons, q parameters good and bad, spaces, tabs, other case, non-ASCII).
@Suite struct AcceptQualityModelTests {
    private static func modelQuality(of type: String, _ subtype: String, in accept: String) -> Double {
        var best: (specificity: Int, q: Double) = (-1, 0)
        ranges: for range in accept.split(separator: ",") {
            let parts = range.split(separator: ";").map { $0.trimmingSpaces.lowercased() }
            guard let media = parts.first else { continue }
            let pieces = media.split(separator: "/", omittingEmptySubsequences: false)
            guard pieces.count == 2 else { continue }
            let specificity: Int
            if pieces[0] == type && pieces[1] == subtype {
                specificity = 2
            } else if pieces[0] == type && pieces[1] == "*" {
                specificity = 1
            } else if pieces[0] == "*" && pieces[1] == "*" {
                specificity = 0
            } else {
                continue
            }
            var q = 1.0
            for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
                guard let weight = HeaderParsing.qValue(parameter.dropFirst(2)) else { continue ranges }
                q = weight
            }
            if specificity > best.specificity {
                best = (specificity, q)
            }
        }
        return best.q
    }

    /// Async, yielding now and then: CPU-bound test code with no suspension point would hold a thread
    /// of the cooperative pool that in-process servers of other suites need.
    @Test func agreesWithTheModel() async {
        let seed = UInt64.random(in: 1 ... .max)
        print("AcceptQualityModelTests seed \(seed)")
        var random = SplitMix64(seed: seed)
        let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
        var values = [browser, "application/json", "text/html;q=0.5, application/json", "*/*", ""]
        // Values built from ranges (media type, then parameters), and as many made of loose pieces.
        let media = ["text/html", "TEXT/Html", "application/json", "Application/JSON", "application/*", "text/*", "*/*", "*/json",
                     "image/webp", "text/html/x", "text", "/", "", "é/json", "text /html"]
        let parameters = ["q=0.5", "Q=0.2", "q=1", "q=0", "q=1.000", "q=0.125", "q=0.1234", "q=1.5", "q=nan", "q=", "q= 0.5", "level=1", "", "Q=0"]
        let spaces = ["", "", " ", "\t", "  "]
        let separators = [",", ", ", ",,", " ,"]
        for _ in 0 ..< 3_000 {
            let ranges = (0 ..< Int.random(in: 1 ... 5, using: &random)).map { _ in
                var range = spaces.randomElement(using: &random)! + media.randomElement(using: &random)!
                for _ in 0 ..< Int.random(in: 0 ... 2, using: &random) {
                    range += spaces.randomElement(using: &random)! + ";" + spaces.randomElement(using: &random)! + parameters.randomElement(using: &random)!
                }
                return range + spaces.randomElement(using: &random)!
            }
            var value = ""
            for (offset, range) in ranges.enumerated() {
                value += (offset == 0 ? "" : separators.randomElement(using: &random)!) + range
            }
            values.append(value)
        }
        let pieces = ["text", "html", "application", "json", "*", "/", ",", ";", "q=", "Q=", "0", "1", ".", "5", " ", "\t", "é", "="]
        for _ in 0 ..< 3_000 {
            values.append((0 ..< Int.random(in: 1 ... 14, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined())
        }
        for (index, value) in values.enumerated() {
            if index % 100 == 0 { await Task.yield() }
            for (type, subtype) in [("text", "html"), ("application", "json")] {
                #expect(HeaderParsing.quality(of: type, subtype, in: value) == Self.modelQuality(of: type, subtype, in: value),
                        "seed \(seed): \(type)/\(subtype) in \(value.debugDescription)")
            }
        }
    }
}
