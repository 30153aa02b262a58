import Markup
import Testing

/// Hostile strings that must render inert in text and in attribute values.
let hostileCorpus: [String] = [
    "<script>alert(1)</script>",
    "</li><li>injected",
    "\"><img src=x onerror=alert(1)>",
    "' onmouseover='alert(1)",
    "&amp;",
    "a & b < c > d",
    "line\nbreak\rcarriage\ttab",
    "nul\u{0}byte",
    "emoji 👋🏽 and ZWJ 👨‍👩‍👧",
    "<!-- comment -->",
    "]]><![CDATA[",
    "\u{202E}right-to-left",
    "",
]

@Suite struct EscapingTests {
    @Test func textEscapesMarkupCharacters() {
        #expect(HTMLText("a & b < c > d \"q\" 'r'").renderedString() == "a &amp; b &lt; c &gt; d \"q\" 'r'")
    }

    @Test func ampersandEntityIsEscapedAgain() {
        #expect(HTMLText("&amp;").renderedString() == "&amp;amp;")
    }

    @Test func nulBecomesReplacementCharacter() {
        #expect(HTMLText("a\u{0}b").renderedString() == "a\u{FFFD}b")
        #expect(span(.title("a\u{0}b")).renderedString() == "<span title=\"a\u{FFFD}b\"></span>")
    }

    @Test func attributeValuesEscapeQuotesAndWhitespaceControls() {
        let html = span(.data("key", "a\"b'c<d>e&f\tg\nh\ri")).renderedString()
        #expect(html == "<span data-key=\"a&quot;b&#39;c&lt;d&gt;e&amp;f&#9;g&#10;h&#13;i\"></span>")
    }

    @Test(arguments: hostileCorpus)
    func hostileTextCannotOpenATag(hostile: String) {
        let html = li { hostile }.renderedString()
        let inner = html.dropFirst("<li>".count).dropLast("</li>".count)
        #expect(!inner.contains("<") && !inner.contains(">"))
        #expect(!inner.contains("\u{0}"))
        #expect(html.hasPrefix("<li>") && html.hasSuffix("</li>"))
    }

    @Test(arguments: hostileCorpus)
    func hostileAttributeCannotLeaveItsQuotes(hostile: String) {
        let html = li(.data("cell", hostile)).renderedString()
        let value = html.dropFirst("<li data-cell=\"".count).dropLast("\"></li>".count)
        #expect(!value.contains("\"") && !value.contains("'") && !value.contains("<") && !value.contains(">"))
        #expect(!value.contains("\n") && !value.contains("\r") && !value.contains("\t"))
    }

    @Test func multibyteTextIsCopiedUnchanged() {
        let text = "Grüße, 世界 👋🏽"
        #expect(HTMLText(text).renderedString() == text)
    }

    @Test func rawHTMLIsOnlyBehindItsUnsafeName() {
        #expect(UnsafeRawHTML("<b>x</b>").renderedString() == "<b>x</b>")
    }
}

@Suite struct AttributeTests {
    @Test func attributeNamesCannotBreakTheTag() {
        #expect(HTMLAttribute.custom("x onload=alert(1) y", "v").name == "x-onload-alert-1--y")
        #expect(HTMLAttribute.custom("a\"b", nil).name == "a-b")
        #expect(HTMLAttribute.custom("", "v").name == "data-invalid")
    }

    @Test func booleanAttributeHasNoValue() {
        #expect(input(.type("checkbox"), .checked).renderedString() == "<input type=\"checkbox\" checked>")
    }

    @Test(arguments: [
        "javascript:alert(1)", "JavaScript:alert(1)", " javascript:alert(1)", "java\tscript:alert(1)",
        "vbscript:x", "data:text/html,<script>", "\u{1}javascript:x",
    ])
    func scriptURLsAreRefused(url: String) {
        #expect(HTMLAttribute.href(url).value == "#")
    }

    @Test(arguments: ["https://example.com/a?b=c", "/lists/todo", "?since=3", "#top", "mailto:a@b.c", "a:b/c?x=javascript:"])
    func ordinaryURLsAreKept(url: String) {
        #expect(HTMLAttribute.href(url).value == url)
    }

    @Test func customTagNamesAreValidated() {
        #expect(element("x-card") { "hi" }?.renderedString() == "<x-card>hi</x-card>")
        #expect(element("x><script") { "hi" } == nil)
        #expect(element("1x") { "hi" } == nil)
        #expect(element("") { "hi" } == nil)
    }
}
