@testable import LiveListHTML
import LiveListTestSupport
import Testing

private func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
    try JSONValue.parse(Array(text.utf8))
}

@Suite struct JSONParserTests {
    @Test(arguments: [
        (#""""#, ""),
        (#""plain text, é and 𝄞""#, "plain text, é and 𝄞"),
        (#""\"quoted\"""#, "\"quoted\""),
        (#""a\nb\tc\\d\/e""#, "a\nb\tc\\d/e"),
        (#""\u00e9\ud834\udd1e""#, "é𝄞"),
        (#""e\u0301 and more""#, "e\u{301} and more"),
        (#""\b\f\r""#, "\u{8}\u{C}\r"),
    ])
    func stringsAreDecoded(json: String, expected: String) throws {
        let value = try parse(json)
        guard case let .string(text) = value else {
            Issue.record("not a string: \(value)")
            return
        }
        // Byte for byte, not only canonically equivalent.
        #expect(Array(text.utf8) == Array(expected.utf8))
    }

    @Test func invalidUTF8IsRefusedAtItsRun() {
        // The run that holds the bad byte starts at the opening quote's next byte, or after an escape.
        #expect(throws: JSONSyntaxError(offset: 1, reason: "invalid UTF-8 in a string")) {
            try JSONValue.parse([0x22, 0x61, 0xFF, 0x22])
        }
        #expect(throws: JSONSyntaxError(offset: 4, reason: "invalid UTF-8 in a string")) {
            try JSONValue.parse([0x22, 0x61, 0x5C, 0x6E, 0x62, 0xC3, 0x22])
        }
        #expect(throws: JSONSyntaxError(offset: 4, reason: "invalid UTF-8 in a string")) {
            try JSONValue.parse([0x22, 0x61, 0x5C, 0x6E, 0xED, 0xA0, 0x80, 0x22])
        }
        #expect(throws: JSONSyntaxError(offset: 2, reason: "control character in a string (escape it)")) {
            try JSONValue.parse([0x22, 0x61, 0x0A, 0x22])
        }
        #expect(throws: JSONSyntaxError(offset: 3, reason: "unterminated string")) {
            try JSONValue.parse([0x22, 0x61, 0x62])
        }
    }

    @Test func literalsAreReadExactly() throws {
        #expect(try parse("[true, false, null]") == .array([.bool(true), .bool(false), .null]))
        for bad in ["tru", "nul", "nulL", "fals", "True", "[nil]"] {
            #expect(throws: JSONSyntaxError.self, "\(bad)") { try parse(bad) }
        }
        #expect(throws: JSONSyntaxError(offset: 1, reason: "invalid literal")) { try parse("[nul]") }
    }

    @Test func repeatedNamesAreRefusedInSmallAndLargeObjects() throws {
        let names = (0 ..< 20).map { "\"m\($0)\": \($0)" }
        let object = try parse("{" + names.joined(separator: ", ") + "}")
        guard case let .object(members) = object else {
            Issue.record("not an object")
            return
        }
        #expect(members.map(\.key) == (0 ..< 20).map { "m\($0)" }, "document order")
        for repeated in [0, 7, 8, 19] {
            let text = "{" + names.joined(separator: ", ") + ", \"m\(repeated)\": 0}"
            #expect(throws: JSONSyntaxError.self, "m\(repeated) again") { try parse(text) }
        }
        #expect(throws: JSONSyntaxError(offset: 9, reason: #"repeated member name "a""#)) { try parse(#"{"a": 1, "a": 2}"#) }
    }

    /// Random strings written by the writer (through `quoted`) read back as the same bytes.
    @Test func writerAndParserRoundTripRandomStrings() throws {
        let alphabet: [Unicode.Scalar] = ["a", "Z", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{1F}", "\u{7F}",
                                          "é", "\u{301}", "\u{2028}", "\u{2029}", "\u{2020}", "\u{FEFF}", "𝄞", "😀"]
        let seed: UInt64 = 12
        var random = SplitMix64(seed: seed)
        for round in 0 ..< 500 {
            var scalars = String.UnicodeScalarView()
            for _ in 0 ..< Int.random(in: 0 ... 40, using: &random) {
                scalars.append(alphabet[Int.random(in: 0 ..< alphabet.count, using: &random)])
            }
            let text = String(scalars)
            let json = quoted(text)
            #expect(!json.utf8.contains(0x0A) && !json.unicodeScalars.contains("\u{2028}"), "one line")
            let value = try parse(json)
            guard case let .string(decoded) = value, Array(decoded.utf8) == Array(text.utf8) else {
                Issue.record("seed \(seed), round \(round): \(json) read back as \(value)")
                return
            }
        }
    }

    @Test func writerEscapesOnlyWhatItMust() {
        #expect(quoted("a\"b\\c") == #""a\"b\\c""#)
        #expect(quoted("\u{1}\u{1F}\r\t\n") == #""\u0001\u001f\r\t\n""#)
        #expect(quoted("\u{2028}x\u{2029}") == #""\u2028x\u2029""#)
        #expect(quoted("†é/") == "\"†é/\"", "U+2020 shares its first two bytes with U+2028")
        // A detail names a value; it does not echo a large one back.
        #expect(quoted(String(repeating: "x", count: 5_000)) == "\"" + String(repeating: "x", count: 200) + "\"… (5000 bytes)")
        let marks = "a" + String(repeating: "\u{301}", count: 4_000)
        #expect(quoted(marks) == "\"\"… (8001 bytes)", "one character of 8 KB is not shown")
    }
}
