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
