import LiveListHTML
import LiveListTestSupport
import Testing

private struct Message: IdentifiableComponent, Equatable {
    var id: String
    var text: String
    var reportsVisibility: Bool { true }
    var body: some HTML { span(.class("hello")) { "Hello \(text)" } }
}

/// Escapes as the HTML serialiser requires, written independently of the writer under test.
private func escapeAttribute(_ value: String) -> String {
    var out = ""
    for scalar in value.unicodeScalars {
        switch scalar {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&#39;"
        case "\t": out += "&#9;"
        case "\n": out += "&#10;"
        case "\r": out += "&#13;"
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out
}

private func escapeText(_ value: String) -> String {
    value.replacingAll("&", "&amp;").replacingAll("<", "&lt;").replacingAll(">", "&gt;")
}

extension String {
    fileprivate func replacingAll(_ target: Character, _ replacement: String) -> String {
        var out = ""
        for character in self {
            if character == target { out += replacement } else { out.append(character) }
        }
        return out
    }
}

@Suite struct HTMLAdapterTests {
    /// The page structure of docs/PROTOCOL.md ("The DOM"), as a golden string.
    @Test func pageStructure() throws {
        let adapter = HTMLAdapter()
        let sections = [
            Section(id: "greet", header: Header("GREET"), cells: [CellNode(Message(id: "v", text: "Vincent"))], footer: Footer("👋")),
            Section(id: "empty", cells: []),
        ]
        let html = adapter.renderRoot(list: "demo", version: 7, options: UpdaterOptions(), rendering: try adapter.render(sections))
        #expect(html == """
            <div class="livelist" data-list="demo" data-version="7" data-animate="true" data-animate-reloads="true" \
            data-animate-scrolling="false" data-keep-offset="false" data-stick-bottom="false">\
            <section class="livelist-section" data-section="greet">\
            <header class="livelist-header"><span class="livelist-header-text">GREET</span></header>\
            <ul class="livelist-cells"><li class="livelist-cell" data-cell="v" data-visibility="true">\
            <span class="hello">Hello Vincent</span></li></ul>\
            <footer class="livelist-footer"><span class="livelist-footer-text">👋</span></footer></section>\
            <section class="livelist-section" data-section="empty"><ul class="livelist-cells"></ul></section></div>
            """)
    }

    @Test func optionsBecomeRootAttributes() {
        let options = UpdaterOptions(isAnimationEnabled: true, keepsContentOffset: true, skipReloadComponents: true, stickToBottom: true)
        let html = HTMLAdapter().renderRoot(list: "l", version: 0, options: options, rendering: RenderedList())
        #expect(html.contains(#"data-animate="true" data-animate-reloads="false" data-animate-scrolling="false" data-keep-offset="true" data-stick-bottom="true""#))
    }

    @Test func containersAreConfigurable() throws {
        var adapter = HTMLAdapter()
        adapter.section = .init(.tbody, classes: "rows")
        adapter.cells = .init(.tr, classes: nil)
        adapter.cell = .init(.div, classes: "row")
        let rendered = try adapter.render([Section(id: "s", cells: [CellNode(TextCell(id: "c", text: "t"))])])
        #expect(rendered.html == #"<tbody class="rows" data-section="s"><tr><div class="row" data-cell="c"><span class="livelist-text">t</span></div></tr></tbody>"#)
    }

    @Test(arguments: hostileStrings)
    func hostileKeysAndTextRenderInert(hostile: String) throws {
        var adapter = HTMLAdapter()
        adapter.cell = .init(.li)
        let cell = try adapter.renderCell(CellNode(TextCell(id: hostile, text: hostile, detail: hostile)))
        #expect(cell.key == hostile)
        let expected = "<li data-cell=\"\(escapeAttribute(hostile))\"><span class=\"livelist-text\">\(escapeText(hostile))</span>"
            + "<small class=\"livelist-detail\">\(escapeText(hostile))</small></li>"
        #expect(cell.html == expected)
        // Exactly the adapter's own tags: nothing the data held opened or closed an element.
        #expect(cell.html.filter { $0 == "<" }.count == 6)
    }

    @Test func textWithNULRendersReplacementCharacter() throws {
        let cell = try HTMLAdapter().renderCell(CellNode(TextCell(id: "k", text: "a\u{0}b")))
        #expect(cell.html.contains("a\u{FFFD}b"))
    }
}
