import LiveListHTML
@_spi(Benchmarks) @testable import LiveListEngine
import Testing

private func changeset(_ from: Int, _ to: Int, _ cell: String = "c") -> ListChangeset {
    ListChangeset(list: "l", from: from, version: to, animate: true, operations: [.delete(cell: cell)])
}

@Suite struct ChangeLogTests {
    @Test func lookupAnswersCurrentChangesetsOrReset() {
        var log = ChangeLog(maximumCount: 10, maximumBytes: 1_000)
        for version in 1 ... 5 { log.append(changeset(version - 1, version), bytes: 10) }
        #expect(log.lookup(since: 5, current: 5) == .current)
        #expect(log.lookup(since: 3, current: 5) == .changesets([changeset(3, 4), changeset(4, 5)]))
        #expect(log.lookup(since: 0, current: 5) == .changesets((1 ... 5).map { changeset($0 - 1, $0) }))
        #expect(log.lookup(since: 6, current: 5) == .reset, "a version in the future")
        #expect(log.lookup(since: -1, current: 5) == .reset, "an unknown version")
    }

    @Test func boundedByCountAndBytes() {
        var log = ChangeLog(maximumCount: 3, maximumBytes: 1_000)
        for version in 1 ... 5 { log.append(changeset(version - 1, version), bytes: 10) }
        #expect(log.entries.count == 3)
        #expect(log.lookup(since: 1, current: 5) == .reset, "too old for the log")
        #expect(log.lookup(since: 2, current: 5) == .changesets([changeset(2, 3), changeset(3, 4), changeset(4, 5)]))

        var small = ChangeLog(maximumCount: 100, maximumBytes: 25)
        for version in 1 ... 5 { small.append(changeset(version - 1, version), bytes: 10) }
        #expect(small.entries.count == 2 && small.byteCount == 20)
    }

    @Test func aDiscontinuityStartsTheLogAnew() {
        var log = ChangeLog(maximumCount: 10, maximumBytes: 1_000)
        log.append(changeset(0, 1), bytes: 10)
        log.append(changeset(7, 8), bytes: 10)
        #expect(log.entries.count == 1)
        #expect(log.lookup(since: 0, current: 8) == .reset)
    }

    @Test func joiningConcatenatesOperations() {
        let joined = ListChangeset.joining([changeset(3, 4, "a"), changeset(4, 5, "b")], animatableChangeCount: 300)
        #expect(joined == ListChangeset(list: "l", from: 3, version: 5, animate: true, operations: [.delete(cell: "a"), .delete(cell: "b")]))
        #expect(!ListChangeset.joining([changeset(3, 4, "a"), changeset(4, 5, "b")], animatableChangeCount: 1).animate)
    }

    // MARK: - Compaction

    private static let shell = RenderedSection(key: "a", opening: "<section data-section=\"a\"><ul>", closing: "</ul></section>",
                                               header: nil, footer: nil, cells: [])

    private static func cell(_ key: String, _ text: String) -> RenderedCell {
        RenderedCell(key: key, html: "<li data-cell=\"\(key)\">\(text)</li>")
    }

    private static func rendering(_ cells: [RenderedCell]) -> RenderedList {
        var section = shell
        section.cells = cells
        return RenderedList(sections: [section])
    }

    /// Logs `steps` (from an empty list at version 0) and answers the catch-up from `since`.
    private func catchUp(_ steps: [[PatchOperation]], since: Int, to rendering: RenderedList) -> ListChangeset {
        var log = ChangeLog(maximumCount: 100, maximumBytes: 1 << 20)
        for (index, operations) in steps.enumerated() {
            log.append(ListChangeset(list: "l", from: index, version: index + 1, animate: true, operations: operations), bytes: 10)
        }
        guard case let .changesets(first, rest) = log.lookup(since: since, current: steps.count), case let changesets = [first] + rest else {
            Issue.record("no changesets")
            return ListChangeset(list: "l", from: 0, version: 0, animate: false, operations: [])
        }
        return log.compactedJoin(changesets, to: rendering, animatableChangeCount: 300)
    }

    @Test func compactionDropsWhatTheViewerNeverSees() {
        let x1 = Self.cell("x", "1"), x2 = Self.cell("x", "2"), x3 = Self.cell("x", "3"), y = Self.cell("y", "y")
        let section = Self.shell
        let steps: [[PatchOperation]] = [
            [.insertSection(section: "a", after: nil, html: section.html, header: nil, footer: nil),
             .insert(cell: "x", section: "a", after: nil, html: x1.html)],                          // 1
            [.insert(cell: "y", section: "a", after: "x", html: y.html)],                          // 2
            [.reload(cell: "x", html: x2.html), .insert(cell: "z", section: "a", after: "y", html: "<li data-cell=\"z\">z</li>")], // 3
            [.move(cell: "y", section: "a", after: nil), .delete(cell: "z")],                      // 4
            [.reload(cell: "x", html: x3.html), .move(cell: "x", section: "a", after: nil)],       // 5
            [.reload(cell: "x", html: x1.html), .move(cell: "y", section: "a", after: nil)],       // 6
        ]
        // From 2 (x1, y): z came and went, x went back to its HTML, and the moves cancel out.
        #expect(catchUp(steps, since: 2, to: Self.rendering([y, x1])).operations == [.move(cell: "y", section: "a", after: nil)])
        // From 1 (x1): only y is new.
        #expect(catchUp(steps, since: 1, to: Self.rendering([y, x1])).operations == [.insert(cell: "y", section: "a", after: nil, html: y.html)])
        // From 0: one section and two inserts, not twelve operations.
        #expect(catchUp(steps, since: 0, to: Self.rendering([y, x1])).operations.count == 3)
        _ = x2
    }

    @Test func operationsInASectionDeletedLaterDropOut() {
        let x = Self.cell("x", "1")
        let b = RenderedSection(key: "b", opening: "<section data-section=\"b\"><ul>", closing: "</ul></section>", header: nil, footer: nil, cells: [])
        let steps: [[PatchOperation]] = [
            [.insertSection(section: "a", after: nil, html: Self.shell.html, header: nil, footer: nil)],   // 1
            [.insertSection(section: "b", after: "a", html: b.html, header: nil, footer: nil),
             .insert(cell: "x", section: "b", after: nil, html: x.html)],                               // 2
            [.reload(cell: "x", html: Self.cell("x", "2").html), .moveSection(section: "b", after: nil)], // 3
            [.deleteSection(section: "b")],                                                              // 4
        ]
        #expect(catchUp(steps, since: 1, to: Self.rendering([])).operations.isEmpty)
        #expect(catchUp(steps, since: 2, to: Self.rendering([])).operations == [.deleteSection(section: "b")])
    }

    /// A log that starts after a list was loaded (non-empty, without a changeset) learns the state from
    /// the first catch-up instead of trusting its assumed empty start.
    @Test func aLogStartedAtALoadedStateCompactsItsFirstCatchUps() {
        let x = Self.cell("x", "1")
        var a = Self.shell
        a.cells = [x]
        let loaded = RenderedList(sections: [a])
        var log = ChangeLog(maximumCount: 100, maximumBytes: 1 << 20)
        log.start(at: 5, rendering: loaded)
        // Loaded at 5; x changes and changes back: a viewer at 5 needs nothing.
        log.append(ListChangeset(list: "l", from: 5, version: 6, animate: true, operations: [.reload(cell: "x", html: Self.cell("x", "2").html)]), bytes: 10)
        log.append(ListChangeset(list: "l", from: 6, version: 7, animate: true, operations: [.reload(cell: "x", html: x.html)]), bytes: 10)
        guard case let .changesets(first, rest) = log.lookup(since: 5, current: 7), case let changesets = [first] + rest else { Issue.record("no changesets"); return }
        let answer = log.compactedJoin(changesets, to: loaded, animatableChangeCount: 300)
        #expect(answer.from == 5 && answer.version == 7)
        #expect(answer.operations.isEmpty, "the log knows the state at 5: \(answer.operations)")
        #expect(log.replayMismatches == 0)
    }

    @Test func aLogThatStartsOnALoadedListStaysCorrect() {
        var log = ChangeLog(maximumCount: 100, maximumBytes: 1 << 20)
        let x = Self.cell("x", "1"), y = Self.cell("y", "1"), b = RenderedSection(
            key: "b", opening: "<section data-section=\"b\"><ul>", closing: "</ul></section>", header: nil, footer: nil, cells: [])
        // Loaded at 5: section a with x. Version 6 adds a section b before it (touches nothing old).
        log.append(ListChangeset(list: "l", from: 5, version: 6, animate: true, operations: [
            .insertSection(section: "b", after: nil, html: b.html, header: nil, footer: nil)]), bytes: 10)
        log.append(ListChangeset(list: "l", from: 6, version: 7, animate: true, operations: [
            .insert(cell: "y", section: "b", after: nil, html: y.html)]), bytes: 10)
        var section = b
        section.cells = [y]
        var a = Self.shell
        a.cells = [x]
        let now = RenderedList(sections: [section, a])
        guard case let .changesets(first, rest) = log.lookup(since: 5, current: 7), case let changesets = [first] + rest else { Issue.record("no changesets"); return }
        let answer = log.compactedJoin(changesets, to: now, animatableChangeCount: 300)
        #expect(answer.operations.count == 2, "the plain join: the log could not know the state at 5")
        #expect(log.replayMismatches == 1)
        log.append(ListChangeset(list: "l", from: 7, version: 8, animate: true, operations: [.reload(cell: "x", html: Self.cell("x", "2").html)]), bytes: 10)
        log.append(ListChangeset(list: "l", from: 8, version: 9, animate: true, operations: [.reload(cell: "x", html: x.html)]), bytes: 10)
        guard case let .changesets(first, rest) = log.lookup(since: 7, current: 9), case let later = [first] + rest else { Issue.record("no changesets"); return }
        #expect(log.compactedJoin(later, to: now, animatableChangeCount: 300).operations.isEmpty, "learned at 7: compacted")
    }

    @Test func versionVectorsParseStrictly() {
        #expect(MultiplexedStream.parseVector("A:3,B.x:7") == ["A": 3, "B.x": 7])
        #expect(MultiplexedStream.parseVector("") == [:])
        #expect(MultiplexedStream.parseVector("A") == nil)
        #expect(MultiplexedStream.parseVector("A:-1") == nil)
        #expect(MultiplexedStream.parseVector("A:x") == nil)
        #expect(MultiplexedStream.parseVector("../x:1") == nil)
        #expect(MultiplexedStream.parseVector("A:1,,B:2") == nil)
    }
}

/// The log's non-empty lists of changesets, written as arrays in these tests.
extension ChangeLog.Lookup {
    static func changesets(_ all: [ListChangeset]) -> Self {
        .changesets(first: all[0], rest: Array(all.dropFirst()))
    }
}

extension ChangeLog {
    mutating func compactedJoin(_ all: [ListChangeset], to rendering: RenderedList, animatableChangeCount: Int) -> ListChangeset {
        compactedJoin(first: all[0], rest: Array(all.dropFirst()), to: rendering, animatableChangeCount: animatableChangeCount)
    }
}

extension ListChangeset {
    static func joining(_ all: [ListChangeset], animatableChangeCount: Int) -> ListChangeset {
        joining(first: all[0], rest: Array(all.dropFirst()), animatableChangeCount: animatableChangeCount)
    }
}
