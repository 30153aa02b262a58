@testable import LiveListHTTP
import Testing

/// The generic parsers of request text: media types, cookies, q-values, forms and credentials.
@Suite struct HeaderParsingTests {
    @Test func mediaTypes() {
        for empty in ["", ";", ";;;", "\t", " ", " ; ", ";charset=utf-8"] {
            #expect(HTTPRequest.mediaType(ofContentType: empty) == nil, "\(empty)")
        }
        #expect(HTTPRequest.mediaType(ofContentType: "Application/JSON; charset=utf-8") == "application/json")
        #expect(HTTPRequest.mediaType(ofContentType: "\ttext/plain\t;") == "text/plain")
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
