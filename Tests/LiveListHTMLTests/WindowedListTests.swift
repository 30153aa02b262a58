import Foundation
import LiveListHTML
import Testing

/// Windowed lists (docs/PROTOCOL.md, "Windowed lists"): the page holds a window of 100 cells between two
/// placeholders and links through the list for pages without JavaScript; a reset carries the window and
/// the counts.
@Suite struct WindowedListTests {
    /// A rendering of sections named `s0`, `s1`, … holding these numbers of cells `c0`, `c1`, … (numbered
    /// over the whole list).
    static func rendering(_ counts: [Int], header: Bool = false) -> RenderedList {
        var next = 0
        return RenderedList(sections: counts.enumerated().map { index, count in
            let cells = (0 ..< count).map { _ in
                defer { next += 1 }
                return RenderedCell(key: "c\(next)", html: #"<li class="livelist-cell" data-cell="c\#(next)">Row \#(next)</li>"#)
            }
            let head = header ? "<header>S\(index)</header>" : nil
            return RenderedSection(
                key: "s\(index)", opening: #"<section data-section="s\#(index)">"# + (head ?? "") + "<ul>", closing: "</ul></section>",
                header: head, footer: nil, cells: cells)
        })
    }

    static func root(_ rendering: RenderedList, at first: Int = 0, options: UpdaterOptions = UpdaterOptions()) -> String {
        HTMLAdapter().renderRoot(list: "big", version: 3, options: options, rendering: rendering, startingAt: first)
    }

    static func cells(_ html: String) -> [String] {
        html.matches(of: /data-cell="([^"]*)"/).map { String($0.1) }
    }

    @Test func aListAboveTheThresholdShowsAWindowBetweenPlaceholders() {
        let html = Self.root(Self.rendering([2_500]))
        #expect(Self.cells(html) == (0 ..< 100).map { "c\($0)" })
        #expect(html.contains(#"data-window="true" data-total="2500" data-first="0" data-cell-height="40" data-fixed-height="false">"#))
        #expect(html.contains(#"<svg class="livelist-gap" data-gap="before" aria-hidden="true" width="1" height="0"></svg>"#))
        #expect(html.contains(#"data-gap="after" aria-hidden="true" width="1" height="\#(2_400 * 40)""#))
        #expect(html.contains(#"<span>Cells 1–100 of 2500</span> <a href="?at=c100" rel="next">Next</a> <a href="?at=c2400">Last</a></nav>"#), "\(html.suffix(400))")
        #expect(!html.contains("First") && !html.contains("Previous"))
    }

    @Test func aWindowStartsAtACellAndIsClampedToTheList() {
        let html = Self.root(Self.rendering([2_500]), at: 1_234, options: UpdaterOptions(cellHeight: 24))
        #expect(Self.cells(html) == (1_234 ..< 1_334).map { "c\($0)" })
        #expect(html.contains(#"data-first="1234" data-cell-height="24" data-fixed-height="true""#))
        #expect(html.contains(#"data-gap="before" aria-hidden="true" width="1" height="\#(1_234 * 24)""#))
        #expect(html.contains(#"<a href="?">First</a> <a href="?at=c1134" rel="prev">Previous</a> <a href="?at=c1334" rel="next">Next</a>"#))
        // Near the end a page still starts at its cell (so that Next from any page never shows a cell twice),
        // with fewer cells; past the end it is the last cell's.
        let end = Self.root(Self.rendering([2_500]), at: 2_450)
        #expect(Self.cells(end) == (2_450 ..< 2_500).map { "c\($0)" })
        #expect(end.contains(#"data-gap="after" aria-hidden="true" width="1" height="0""#) && !end.contains("Next"))
        #expect(end.contains(#"<a href="?at=c2350" rel="prev">Previous</a>"#) && !end.contains("Last"))
        #expect(Self.cells(Self.root(Self.rendering([2_500]), at: 9_999)) == ["c2499"])
    }

    @Test func aWindowAcrossSectionsHoldsOnlyTheirCellsInIt() {
        // Sections of 600, 0, 50 and 1,000 cells: a window from 580 spans s0's last 20, the empty s1,
        // all of s2 and s3's first 30; s3 keeps its header.
        let html = Self.root(Self.rendering([600, 0, 50, 1_000], header: true), at: 580)
        let sections = html.matches(of: /data-section="([^"]*)"/).map { String($0.1) }
        #expect(sections == ["s0", "s1", "s2", "s3"])
        #expect(Self.cells(html) == (580 ..< 680).map { "c\($0)" })
        let late = Self.root(Self.rendering([600, 0, 50, 1_000], header: true), at: 900)
        #expect(late.matches(of: /data-section="([^"]*)"/).map { String($0.1) } == ["s3"])
        #expect(late.contains("<header>S3</header>"))
    }

    @Test func aListAtOrBelowTheThresholdOrWithWindowingOffIsWhole() {
        #expect(Self.cells(Self.root(Self.rendering([1_000]))).count == 1_000)
        #expect(!Self.root(Self.rendering([1_000])).contains("data-window"))
        #expect(Self.cells(Self.root(Self.rendering([5_000]), options: UpdaterOptions(windowAbove: nil))).count == 5_000)
        #expect(Self.cells(Self.root(Self.rendering([50]), options: UpdaterOptions(windowAbove: 10))).count == 50,
                "a list that fits in one window page shows all of it")
    }

    @Test func pageLinksEscapeTheirKeys() {
        var rendering = Self.rendering([1_500])
        rendering.sections[0].cells[100].key = #"a&b "c"/é"#
        let html = Self.root(rendering)
        #expect(html.contains(#"<a href="?at=a%26b%20%22c%22%2F%C3%A9" rel="next">Next</a>"#), "\(html.suffix(300))")
    }

    @Test func aResetOfAWindowedListCarriesTheWindowAndTheCounts() throws {
        let rendering = Self.rendering([1_500, 0, 700])
        let snapshot = ListSnapshot(list: "big", version: 9, rendering: rendering)
        let windowed = try #require(JSONSerialization.jsonObject(with: Data(snapshot.reset(from: 2, windowAbove: 1_000).encodedJSON())) as? [String: Any])
        let op = try #require((windowed["ops"] as? [[String: Any]])?.first)
        #expect(op["op"] as? String == "reset" && op["total"] as? Int == 2_200)
        let sections = try #require(op["sections"] as? [[String: Any]])
        #expect(sections.map { $0["key"] as? String } == ["s0", "s1", "s2"])
        #expect(sections.map { $0["count"] as? Int } == [1_500, 0, 700])
        #expect(sections.map { ($0["cells"] as? [Any])?.count } == [100, 0, 0])
        #expect(Self.cells(op["html"] as? String ?? "") == (0 ..< 100).map { "c\($0)" })
        // Below the threshold, or without one, a reset is whole (and has no `total`).
        for changeset in [snapshot.reset(from: 2), snapshot.reset(from: 2, windowAbove: 5_000)] {
            let whole = try #require(JSONSerialization.jsonObject(with: Data(changeset.encodedJSON())) as? [String: Any])
            let op = try #require((whole["ops"] as? [[String: Any]])?.first)
            #expect(op["total"] == nil && ((op["sections"] as? [[String: Any]])?.first?["cells"] as? [Any])?.count == 1_500)
        }
    }

    @Test func windowsCountOverEverySectionInOrder() {
        let rendering = Self.rendering([3, 0, 4])
        #expect(rendering.window(from: 2, count: 3).map { $0.section.cells.map(\.key) } == [["c2"], [], ["c3", "c4"]])
        #expect(rendering.window(from: 2, count: 3).map(\.start) == [0, 3, 3])
        #expect(rendering.window(from: 7, count: 5).map(\.section.key) == [], "past the end: nothing")
        #expect(rendering.cellKey(at: 6) == "c6" && rendering.cellKey(at: 7) == nil && rendering.cellKey(at: -1) == nil)
        #expect(rendering.position(ofCell: "c5") == 5 && rendering.position(ofCell: "x") == nil)
    }
}
