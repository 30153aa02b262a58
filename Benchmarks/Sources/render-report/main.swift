// render-report: measures the HTML side of LiveList on a 10,000-cell list and prints Markdown.
//
//  1. Rendering the whole list to bytes with HTMLAdapter, beside a naive renderer that concatenates
//     Strings and escapes with replacingOccurrences, in the same run: MB/s and the ratio.
//  2. One changed cell: PatchUpdater's time for the new render (diff + render of that cell + ops), and
//     the bytes of the Server-Sent Event beyond the cell's JSON-escaped HTML (goal: under 400).
//  3. 1,000 moves: the event's bytes, per move.
//  4. An unchanged render of the same list: PatchUpdater's time.
//  5. Carbon's alwaysRenderVisibleComponents (default true): one changed cell of a 10,000-cell app
//     list with the option off and on, same run, for an Equatable component (the default
//     shouldContentUpdate), a Carbon-style one that compares one property only, and one that is not
//     Equatable (every surviving cell rendered again).
//
//     swift run -c release --package-path Benchmarks render-report

import Foundation
import LiveListHTML
import LiveListHTTP

/// A realistic cell: a checkbox, an escaped title and a detail line.
struct TodoCell: IdentifiableComponent, Equatable {
    var id: Int
    var title: String
    var done: Bool

    var body: some HTML {
        label(.class("todo")) {
            if done {
                input(.type("checkbox"), .checked)
            } else {
                input(.type("checkbox"))
            }
            span(.class("title")) { title }
            small(.class("detail")) { "#\(id) · added by <ops> & friends" }
        }
    }
}

func makeSections(cells: Int, sections: Int, titleSuffix: (Int) -> String = { _ in "" }) -> [Section] {
    let perSection = cells / sections
    return (0 ..< sections).map { section in
        Section(
            id: "s\(section)",
            header: Header("Section \(section)"),
            cells: (0 ..< perSection).map { index in
                let id = section * perSection + index
                return CellNode(TodoCell(id: id, title: "Task \(id): \"buy\" milk & <eggs>\(titleSuffix(id))", done: id % 3 == 0))
            }
        )
    }
}

/// The naive baseline: String concatenation with Foundation's replacingOccurrences for escaping, the
/// way a hand-written template or an enum-tree DSL renders.
func naiveEscape(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;")
        .replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;")
        .replacingOccurrences(of: "\"", with: "&quot;")
        .replacingOccurrences(of: "'", with: "&#39;")
}

func naiveRender(_ sections: [Section]) -> [UInt8] {
    var html = ""
    for section in sections {
        html += "<section class=\"livelist-section\" data-section=\"" + naiveEscape(section.id.key) + "\">"
        if let header = section.header?.component(as: Header.self) {
            html += "<header class=\"livelist-header\"><span class=\"livelist-header-text\">" + naiveEscape(header.text) + "</span></header>"
        }
        html += "<ul class=\"livelist-cells\">"
        for cell in section.cells {
            let todo = cell.component.as(TodoCell.self)!
            html += "<li class=\"livelist-cell\" data-cell=\"" + naiveEscape(cell.id.key) + "\">"
            html += "<label class=\"todo\"><input type=\"checkbox\"" + (todo.done ? " checked" : "") + ">"
            html += "<span class=\"title\">" + naiveEscape(todo.title) + "</span>"
            html += "<small class=\"detail\">" + naiveEscape("#\(todo.id) · added by <ops> & friends") + "</small></label></li>"
        }
        html += "</ul></section>"
    }
    return Array(html.utf8)
}

/// Median wall-clock milliseconds of `runs` calls of `work` (after one warm-up call).
func medianMilliseconds<T>(runs: Int, _ work: () throws -> T) rethrows -> (Double, T) {
    let clock = ContinuousClock()
    var result = try work()
    var samples: [Double] = []
    for _ in 0 ..< runs {
        let duration = try clock.measure { result = try work() }
        samples.append(Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1e3)
    }
    samples.sort()
    return (samples[samples.count / 2], result)
}

func format(_ value: Double, _ digits: Int = 2) -> String {
    String(format: "%.\(digits)f", value)
}

let cellCount = 10_000
let sections = makeSections(cells: cellCount, sections: 100)
let adapter = HTMLAdapter()

// 1. Rendering throughput.
let (fastMS, fastBytes) = try medianMilliseconds(runs: 21) { () throws -> [UInt8] in
    let rendering = try adapter.render(sections)
    return Array(adapter.renderRoot(list: "bench", version: 1, options: UpdaterOptions(), rendering: rendering).utf8)
}
let (naiveMS, naiveBytes) = medianMilliseconds(runs: 21) { naiveRender(sections) }
let fastMBs = Double(fastBytes.count) / 1e6 / (fastMS / 1e3)
let naiveMBs = Double(naiveBytes.count) / 1e6 / (naiveMS / 1e3)

print("## Rendering a \(cellCount)-cell list (100 sections) to bytes\n")
print("| renderer | median ms | bytes | MB/s |")
print("|---|---:|---:|---:|")
print("| LiveList HTMLAdapter (whole page root) | \(format(fastMS)) | \(fastBytes.count) | \(format(fastMBs, 0)) |")
print("| naive String concatenation + replacingOccurrences | \(format(naiveMS)) | \(naiveBytes.count) | \(format(naiveMBs, 0)) |")
print("\nLiveList renders \(format(fastMBs / naiveMBs)) times the naive renderer's throughput in this run.\n")

// 2. One changed cell, and 4. an unchanged render. Inputs are built beforehand: only updates are timed.
let changedID = 5_000
let variants = [sections, makeSections(cells: cellCount, sections: 100) { $0 == changedID ? " (edited)" : "" }]
let renderer = Renderer(adapter: adapter, updater: PatchUpdater(list: "bench"))
try renderer.render(sections)
var flip = 0
let (changeMS, lastChange) = try medianMilliseconds(runs: 21) { () throws -> ListChangeset? in
    flip = 1 - flip
    return try renderer.render(variants[flip])
}
let (unchangedMS, unchanged) = try medianMilliseconds(runs: 21) { try renderer.render(renderer.data) }
precondition(unchanged == nil, "an unchanged render must produce no changeset")

guard let change = lastChange, change.operations.count == 1, case let .reload(_, html) = change.operations[0] else {
    fatalError("expected exactly one reload, got \(String(describing: lastChange?.operations.map(\.name)))")
}
// Framed as the server frames it (one SSE framer, in LiveListHTTP).
let event = ServerSentEvent.encode(id: String(change.version), event: "patch", data: change.encodedJSON())
let escaped = JSONEscapedLength.of(html)
let overhead = event.count - escaped

print("## One changed cell in a \(cellCount)-cell list\n")
print("| measure | value |")
print("|---|---:|")
print("| PatchUpdater render with one changed cell, median ms | \(format(changeMS, 3)) |")
print("| PatchUpdater render of the unchanged list, median ms | \(format(unchangedMS, 3)) |")
print("| SSE event bytes | \(event.count) |")
print("| the cell's JSON-escaped HTML, bytes | \(escaped) |")
print("| event bytes beyond the cell's HTML (goal < 400) | \(overhead) |")
print("")

// 3. 1,000 moves: reverse the order of the first 1,001 cells of one big section.
let big = [Section(id: "all", cells: (0 ..< cellCount).map { CellNode(TodoCell(id: $0, title: "Task \($0)", done: false)) })]
let movedRenderer = Renderer(adapter: adapter, updater: PatchUpdater(list: "bench"))
try movedRenderer.render(big)
var reordered = big[0].cells
reordered[0 ... 1_000].reverse()
// A single timed call: once applied, the same render changes nothing.
var movesResult: ListChangeset?
let moveDuration = try ContinuousClock().measure { movesResult = try movedRenderer.render([Section(id: "all", cells: reordered)]) }
let moveMS = Double(moveDuration.components.attoseconds) / 1e15 + Double(moveDuration.components.seconds) * 1e3
guard let moves = movesResult else { fatalError("expected moves") }
let moveEvent = ServerSentEvent.encode(id: String(moves.version), event: "patch", data: moves.encodedJSON())
print("## 1,000 moves in a \(cellCount)-cell list\n")
print("| measure | value |")
print("|---|---:|")
print("| operations (all moves) | \(moves.operations.count) |")
print("| SSE event bytes | \(moveEvent.count) |")
print("| bytes per move | \(format(Double(moveEvent.count) / Double(moves.operations.count), 1)) |")
print("| animate | \(moves.animate) |")
print("| PatchUpdater render, ms (one run) | \(format(moveMS, 3)) |")

enum JSONEscapedLength {
    /// The length of `html` as a JSON string body (quotes, backslashes and controls escaped).
    static func of(_ html: String) -> Int {
        var count = 0
        for byte in html.utf8 {
            switch byte {
            case 0x22, 0x5C, 0x0A, 0x0D, 0x09: count += 2
            case 0x00 ..< 0x20: count += 6
            default: count += 1
            }
        }
        return count
    }
}

// 5. alwaysRenderVisibleComponents, off and on, same run.

/// A Carbon-style cell: `shouldContentUpdate` compares the title only, for cheap updates.
struct CarbonStyleCell: IdentifiableComponent, Equatable {
    var id: Int
    var title: String
    var done: Bool
    var body: some HTML { span(.class("title")) { title }; small { done ? "done" : "open" } }
    func shouldContentUpdate(with next: CarbonStyleCell) -> Bool { title != next.title }
}

/// A cell that is not Equatable: nothing proves two of them the same.
struct OpaqueCell: IdentifiableComponent {
    var id: Int
    var title: String
    var body: some HTML { span(.class("title")) { title } }
}

func appSections(_ make: (Int) -> CellNode) -> [Section] {
    (0 ..< 100).map { section in Section(id: "s\(section)", header: Header("Section \(section)"), cells: (0 ..< 100).map { make(section * 100 + $0) }) }
}

print("## alwaysRenderVisibleComponents on a \(cellCount)-cell app list (one changed cell, median of 21 renders)\n")
print("| component | off, ms | on (default), ms | on / off |")
print("|---|---:|---:|---:|")
let kinds: [(String, (Int, Bool) -> CellNode)] = [
    ("Equatable (default shouldContentUpdate)", { id, changed in CellNode(TodoCell(id: id, title: "Task \(id)", done: changed && id == changedID)) }),
    ("Carbon-style (compares the title only)", { id, changed in CellNode(CarbonStyleCell(id: id, title: "Task \(id)", done: changed && id == changedID)) }),
    ("not Equatable", { id, changed in CellNode(OpaqueCell(id: id, title: changed && id == changedID ? "Edited" : "Task \(id)")) }),
]
for (name, make) in kinds {
    let states = [appSections { make($0, false) }, appSections { make($0, true) }]
    var timings: [Double] = []
    for on in [false, true] {
        let renderer = Renderer(adapter: adapter, updater: PatchUpdater(list: "bench", options: UpdaterOptions(alwaysRenderVisibleComponents: on)))
        try renderer.render(states[0])
        var next = 0
        let (ms, _) = try medianMilliseconds(runs: 21) { () throws -> ListChangeset? in
            next = 1 - next
            return try renderer.render(states[next])
        }
        timings.append(ms)
    }
    print("| \(name) | \(format(timings[0], 3)) | \(format(timings[1], 3)) | \(format(timings[1] / timings[0]))× |")
}
print("")
