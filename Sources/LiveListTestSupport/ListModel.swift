// Shared by the test targets (a test target cannot import another): a model of the browser's list to
// apply changesets to, a strict reader of changeset JSON, seeded randomness and hostile strings.
import Foundation
public import LiveListHTML

/// A model of what the browser holds, to which the tests apply changesets exactly as docs/PROTOCOL.md
/// defines the operations. Every anchor is checked; a bad one throws instead of guessing.
public struct ListModel: Equatable, CustomStringConvertible {
    public struct Section: Equatable {
        public var key: String
        /// The section element's start tag, the empty cells container, and its end tag, around which
        /// the header and footer sit.
        public var start: String
        public var middle: String
        public var end: String
        public var header: String?
        public var footer: String?
        public var cells: [RenderedCell]

        /// Equal when every part has the same bytes, as the DOM compares them.
        public static func == (a: Section, b: Section) -> Bool {
            same(a.key, b.key) && same(a.start, b.start) && same(a.middle, b.middle) && same(a.end, b.end)
                && same(a.header, b.header) && same(a.footer, b.footer) && a.cells == b.cells
        }

        /// The section element without cells, as in a snapshot and in `insertSection`.
        public var html: String { start + (header ?? "") + middle + (footer ?? "") + end }

        public init(key: String, html: String, header: String?, footer: String?, cells: [RenderedCell]) throws {
            self.key = key
            self.header = header
            self.footer = footer
            self.cells = cells
            // The header is the first element inside the start tag (whose attributes cannot hold `<`),
            // the footer the last before the end tag.
            var rest = Substring(html)
            if let header {
                guard let range = rest.range(of: header) else { throw ModelError("header not in \(html)") }
                start = String(rest[..<range.lowerBound])
                rest = rest[range.upperBound...]
            } else {
                guard let close = rest.firstIndex(of: ">") else { throw ModelError("no start tag in \(html)") }
                start = String(rest[...close])
                rest = rest[rest.index(after: close)...]
            }
            if let footer {
                guard let range = rest.range(of: footer, options: .backwards) else { throw ModelError("footer not in \(html)") }
                middle = String(rest[..<range.lowerBound])
                end = String(rest[range.upperBound...])
            } else {
                guard let open = rest.range(of: "</", options: .backwards) else { throw ModelError("no end tag in \(html)") }
                middle = String(rest[..<open.lowerBound])
                end = String(rest[open.lowerBound...])
            }
        }
    }

    public var sections: [Section]

    public init(_ rendering: RenderedList) throws {
        sections = try rendering.sections.map {
            try Section(key: $0.key, html: $0.html, header: $0.header, footer: $0.footer, cells: $0.cells)
        }
    }

    public var description: String {
        sections.map { "\($0.key): \($0.cells.map(\.key))" }.joined(separator: "; ")
    }

    /// Applies the operations in order.
    public mutating func apply(_ changeset: ListChangeset) throws {
        for operation in changeset.operations {
            try apply(operation)
        }
    }

    public mutating func apply(_ operation: PatchOperation) throws {
        switch operation {
        case let .deleteSection(key):
            sections.remove(at: try sectionIndex(key))
        case let .insertSection(key, after, html, header, footer):
            guard sections.allSatisfy({ !same($0.key, key) }) else { throw ModelError("section \(key) exists") }
            let section = try Section(key: key, html: html, header: header, footer: footer, cells: [])
            sections.insert(section, at: try sectionPosition(after: after))
        case let .moveSection(key, after):
            let section = sections.remove(at: try sectionIndex(key))
            sections.insert(section, at: try sectionPosition(after: after))
        case let .reloadSection(key, header, footer):
            let index = try sectionIndex(key)
            guard !same(sections[index].header, header) || !same(sections[index].footer, footer) else {
                throw ModelError("reloadSection \(key) with the same header and footer")
            }
            sections[index].header = header
            sections[index].footer = footer
        case let .delete(key):
            let (section, index) = try cellIndex(key)
            sections[section].cells.remove(at: index)
        case let .insert(key, sectionKey, after, html):
            guard (try? cellIndex(key)) == nil else { throw ModelError("cell \(key) exists") }
            let section = try sectionIndex(sectionKey)
            sections[section].cells.insert(RenderedCell(key: key, html: html), at: try cellPosition(after: after, in: section))
        case let .move(key, sectionKey, after):
            let (from, index) = try cellIndex(key)
            let cell = sections[from].cells.remove(at: index)
            let section = try sectionIndex(sectionKey)
            sections[section].cells.insert(cell, at: try cellPosition(after: after, in: section))
        case let .reload(key, html):
            let (section, index) = try cellIndex(key)
            guard !same(sections[section].cells[index].html, html) else { throw ModelError("reload of \(key) with identical HTML") }
            sections[section].cells[index].html = html
        case let .reset(_, rendered):
            self = try ListModel(RenderedList(sections: rendered))
        }
    }

    func sectionIndex(_ key: String) throws -> Int {
        guard let index = sections.firstIndex(where: { same($0.key, key) }) else { throw ModelError("no section \(key)") }
        return index
    }

    func sectionPosition(after key: String?) throws -> Int {
        guard let key else { return 0 }
        return try sectionIndex(key) + 1
    }

    func cellIndex(_ key: String) throws -> (Int, Int) {
        for (sectionIndex, section) in sections.enumerated() {
            if let index = section.cells.firstIndex(where: { same($0.key, key) }) {
                return (sectionIndex, index)
            }
        }
        throw ModelError("no cell \(key)")
    }

    func cellPosition(after key: String?, in section: Int) throws -> Int {
        guard let key else { return 0 }
        guard let index = sections[section].cells.firstIndex(where: { same($0.key, key) }) else {
            throw ModelError("anchor \(key) is not in section \(sections[section].key)")
        }
        return index + 1
    }
}

public struct ModelError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// SplitMix64: a 64-bit state advanced by the golden-ratio increment, then mixed. The one seeded
/// generator of the project's tests and benchmarks, so that every random test and scenario replays from
/// its seed (and `Scripts/diff_scenarios.py` draws exactly the same numbers). All arithmetic wraps.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The current state; the next call to ``next()`` adds the increment to it first.
    public var state: UInt64

    /// A generator whose state is `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64-bit value. Seed 1 gives `0x910a2dec89025cc1`, then `0xbeeb8da1658eec67`.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `next() % n`: plain modulo, with its slight bias, exactly as the benchmark scenarios define it.
    /// `n` must be positive.
    public mutating func below(_ n: Int) -> Int {
        precondition(n > 0, "below(\(n)): the bound must be positive")
        return Int(next() % UInt64(n))
    }
}

/// Strings that try to break out of text, attributes and the JSON they travel in.
public let hostileStrings: [String] = [
    "<script>alert(1)</script>", "</li><li data-cell=\"x\">", "\"><img src=x onerror=alert(1)>", "it's",
    "a \"quoted\" key", "&amp;", "&lt;b&gt;", "line\nbreak", "tab\there", "cr\rhere", "👋🏽", "👨‍👩‍👧",
    " spaced ", "\\backslash\\", "\u{2028}sep\u{2029}", "é", "e\u{301}", "1", "null", "{\"op\":\"reset\"}",
    "<!--", "]]>", "\u{7F}del", "\u{1}ctl",
]

/// Keys are equal when their bytes are, as in the DOM (not under Swift's canonical equivalence).
public func same(_ a: String, _ b: String) -> Bool {
    a.utf8.elementsEqual(b.utf8)
}

/// ``same(_:_:)`` of optional strings: both nil, or both present with the same bytes.
public func same(_ a: String?, _ b: String?) -> Bool {
    switch (a, b) {
    case (nil, nil): true
    case let (a?, b?): same(a, b)
    default: false
    }
}
