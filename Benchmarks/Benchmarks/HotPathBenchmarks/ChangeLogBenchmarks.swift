// ChangeLog: the recent changesets of one list, from which a viewer that fell behind is caught up.
//
//   append       a new log (256 changesets kept, the server's default) takes the history of a 1,000-cell
//                list: its creation, then N or 8N small edits (1 to 3 reloads or moves each); past 256,
//                every append drops the oldest and replays it on the log's base.
//   catch-up     a viewer 60 to 200 versions behind, on a list of N or 8N cells whose log holds 256
//                edits: lookup(since:current:) then compactedJoin(first:rest:to:animatableChangeCount:),
//                which replays the log from its base and diffs the viewer's state against the current
//                rendering.

import Benchmark
@_spi(Benchmarks) import LiveListEngine
import LiveListHTML

func changeLogBenchmarks() {
    for count in [1_000, 8_000] {
        Benchmark(
            "ChangeLog append \(sizeName(count)) changesets, 256 kept",
            configuration: hotPathConfiguration(iterations: 200)
        ) { (benchmark: Benchmark, histories: [ListHistory]) in
            let history = histories[benchmark.currentIteration % histories.count]
            for _ in benchmark.scaledIterations {
                var log = ChangeLog(maximumCount: 256, maximumBytes: 4 << 20)
                for entry in history.changesets {
                    log.append(entry.changeset, bytes: entry.bytes)
                }
                blackHole(log)
            }
        } setup: {
            try (1 ... 2).map { seed -> ListHistory in
                var history = ListHistory(cells: 1_000, seed: UInt64(seed))
                for _ in 1 ..< count {
                    history.edit()
                }
                try history.check()
                return history
            }
        }
    }

    for cells in [10_000, 80_000] {
        Benchmark(
            "ChangeLog catch-up 60-200 behind, \(sizeName(cells)) cells",
            configuration: hotPathConfiguration(iterations: 100)
        ) { (benchmark: Benchmark, fixture: CatchUpFixture) throws in
            let since = fixture.versions[benchmark.currentIteration % fixture.versions.count]
            for _ in benchmark.scaledIterations {
                blackHole(try fixture.catchUp(since: since))
            }
        } setup: {
            try CatchUpFixture(cells: cells)
        }
    }
}

/// A list's history as changesets, made on a model of its rendering: sections of 100 cells, created in
/// one changeset, then edited.
struct ListHistory {
    private(set) var sections: [RenderedSection] = []
    private(set) var changesets: [(changeset: ListChangeset, bytes: Int)] = []
    private var random: InputRandom

    /// The list created with `cells` cells: the history's first changeset, from version 0.
    init(cells: Int, seed: UInt64) {
        random = InputRandom(seed: seed)
        var operations: [PatchOperation] = []
        var previousSection: String?
        for index in 0 ..< cells / 100 {
            let key = "s\(index)"
            var section = RenderedSection(
                key: key, opening: "<section data-section=\"\(key)\"><ul>", closing: "</ul></section>",
                header: nil, footer: nil, cells: []
            )
            operations.append(.insertSection(section: key, after: previousSection, html: section.html, header: nil, footer: nil))
            var previousCell: String?
            for number in (index * 100) ..< ((index + 1) * 100) {
                let cell = RenderedCell(key: "c\(number)", html: "<li data-cell=\"c\(number)\">Task \(number)</li>")
                operations.append(.insert(cell: cell.key, section: key, after: previousCell, html: cell.html))
                section.cells.append(cell)
                previousCell = cell.key
            }
            sections.append(section)
            previousSection = key
        }
        record(operations)
    }

    /// The current version.
    var version: Int { changesets.count }

    /// The current rendering.
    var rendering: RenderedList { RenderedList(sections: sections) }

    /// Records an edit of 1 to 3 operations, each a reload of a random cell or its move to a random
    /// place in its section.
    mutating func edit() {
        var operations: [PatchOperation] = []
        for _ in 0 ... random.below(3) {
            let section = random.below(sections.count)
            let position = random.below(sections[section].cells.count)
            if random.below(2) == 0 {
                let key = sections[section].cells[position].key
                let html = "<li data-cell=\"\(key)\">Edited at \(version + 1), #\(random.below(1_000_000))</li>"
                sections[section].cells[position].html = html
                operations.append(.reload(cell: key, html: html))
            } else {
                let cell = sections[section].cells.remove(at: position)
                let place = random.below(sections[section].cells.count + 1)
                sections[section].cells.insert(cell, at: place)
                let after = place == 0 ? nil : sections[section].cells[place - 1].key
                operations.append(.move(cell: cell.key, section: sections[section].key, after: after))
            }
        }
        record(operations)
    }

    private mutating func record(_ operations: [PatchOperation]) {
        var bytes = 0
        for operation in operations {
            switch operation {
            case let .insert(_, _, _, html), let .reload(_, html): bytes += 48 + html.utf8.count
            default: bytes += 48
            }
        }
        changesets.append((ListChangeset(list: "bench", from: version, version: version + 1, animate: true, operations: operations), bytes))
    }

    /// Checks that the changesets, applied in order to an empty list, make the model's rendering (what a
    /// log's replay must find, or it would measure its fallback instead).
    func check() throws {
        var state = KeyedRendering()
        for entry in changesets {
            try state.apply(entry.changeset)
        }
        try expect(state == KeyedRendering(rendering), "the history does not replay to its rendering")
    }
}

/// A log holding the last 256 changesets of a list of `cells` cells, and the versions viewers catch up from.
struct CatchUpFixture {
    let log: ChangeLog
    let rendering: RenderedList
    let current: Int
    let versions: [Int]

    init(cells: Int) throws {
        var history = ListHistory(cells: cells, seed: 3)
        for _ in 0 ..< 300 {
            history.edit()
        }
        try history.check()
        var log = ChangeLog(maximumCount: 256, maximumBytes: 4 << 20)
        for entry in history.changesets {
            log.append(entry.changeset, bytes: entry.bytes)
        }
        self.log = log
        rendering = history.rendering
        let current = history.version
        self.current = current
        versions = (0 ..< 8).map { current - 200 + $0 * 20 }
        for since in versions {
            let joined = try catchUp(since: since)
            try expect(joined.from == since && joined.version == current && !joined.operations.isEmpty,
                       "the catch-up from \(since) went from \(joined.from) to \(joined.version)")
        }
    }

    /// The changeset that brings a viewer at `since` to the current version, from a copy of the log (a
    /// catch-up remembers its answer, which the next must not find).
    func catchUp(since: Int) throws -> ListChangeset {
        var log = log
        guard case let .changesets(first, rest) = log.lookup(since: since, current: current) else {
            throw FixtureError(description: "the log has no changesets from version \(since)")
        }
        return log.compactedJoin(first: first, rest: rest, to: rendering, animatableChangeCount: 300)
    }
}
