// PatchUpdater: one render of a list of N and 8N cells (100 cells to a section, todo cells with escaped
// text) by the web's diffing updater, PatchUpdater.performUpdates(adapter:from:to:): the staged diff of
// the old sections against the new, the render of what changed, and the changeset's operations.
//
//   reloads          5 cells' titles edited: 5 `reload`s
//   moves            100 cells moved to random places in random sections: `move`s
//   section inserts  10 sections of 100 new cells inserted among the others: 10 `insertSection`s and
//                    1,000 `insert`s
//
// Each iteration starts from the same updater (a copy, holding the old rendering) and one of four
// targets made with different random choices.

import Benchmark
import LiveListHTML

func patchUpdaterBenchmarks() {
    for cells in [10_000, 80_000] {
        for change in UpdaterFixture.Change.allCases {
            Benchmark(
                "PatchUpdater \(change.rawValue), \(sizeName(cells)) cells",
                configuration: hotPathConfiguration(iterations: 100)
            ) { (benchmark: Benchmark, fixture: UpdaterFixture) throws in
                let target = fixture.targets[benchmark.currentIteration % fixture.targets.count]
                for _ in benchmark.scaledIterations {
                    var updater = fixture.updater
                    blackHole(try updater.performUpdates(adapter: fixture.adapter, from: fixture.source, to: target))
                }
            } setup: {
                try UpdaterFixture(cells: cells, change: change)
            }
        }
    }
}

/// A todo cell as an app renders it: a checkbox, an escaped title and a detail line.
struct BenchTodo: IdentifiableComponent, Equatable {
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

/// An updater holding the rendering of `source`, and targets that differ from `source` by one kind of
/// change.
struct UpdaterFixture {
    /// The kinds of change measured.
    enum Change: String, CaseIterable {
        case reloads = "5 reloads"
        case moves = "100 moves"
        case sectionInserts = "10 section inserts"
    }

    static let cellsPerSection = 100

    let adapter = HTMLAdapter()
    let source: [Section]
    let updater: PatchUpdater
    let targets: [[Section]]

    init(cells: Int, change: Change) throws {
        let sectionCount = cells / Self.cellsPerSection
        source = (0 ..< sectionCount).map { section in
            Self.section(section, cells: (0 ..< Self.cellsPerSection).map { section * Self.cellsPerSection + $0 })
        }
        var updater = PatchUpdater(list: "bench")
        _ = try updater.performUpdates(adapter: adapter, from: [], to: source)
        try expect(updater.rendering.cellCount == cells, "the first render has \(updater.rendering.cellCount) cells")
        self.updater = updater

        var targets: [[Section]] = []
        for variant in 0 ..< 4 {
            var random = InputRandom(seed: UInt64(variant + 1))
            let target = switch change {
            case .reloads: Self.reloading(source, count: 5, variant: variant, random: &random)
            case .moves: Self.moving(source, count: 100, random: &random)
            case .sectionInserts: Self.insertingSections(source, count: 10, firstCell: cells * (variant + 2), random: &random)
            }
            var copy = updater
            guard let changeset = try copy.performUpdates(adapter: adapter, from: source, to: target) else {
                throw FixtureError(description: "variant \(variant) of \(change.rawValue) made no changeset")
            }
            let names = changeset.operations.map(\.name)
            switch change {
            case .reloads:
                try expect(names == Array(repeating: "reload", count: 5), "reloads gave \(names.count) operations")
            case .moves:
                try expect(!names.isEmpty && names.allSatisfy { $0 == "move" }, "moves gave \(Set(names))")
            case .sectionInserts:
                try expect(names.filter { $0 == "insertSection" }.count == 10 && names.filter { $0 == "insert" }.count == 1_000,
                           "section inserts gave \(names.count) operations")
            }
            targets.append(target)
        }
        self.targets = targets
    }

    /// The section numbered `index` (its id `s` and the number unless `id` says otherwise) holding
    /// the cells numbered `cells`.
    static func section(_ index: Int, id: String? = nil, cells: [Int]) -> Section {
        Section(
            id: id ?? "s\(index)",
            header: Header("Section \(index)"),
            cells: cells.map { number in
                CellNode(BenchTodo(
                    id: number,
                    title: "Task \(number): \"buy\" milk & <eggs>",
                    done: number % 3 == 0
                ))
            }
        )
    }

    /// `source` with the titles of `count` different random cells edited.
    static func reloading(_ source: [Section], count: Int, variant: Int, random: inout InputRandom) -> [Section] {
        var target = source
        var edited = Set<Int>()
        while edited.count < count {
            let section = random.below(target.count)
            let position = random.below(target[section].cells.count)
            guard var todo = target[section].cells[position].component.as(BenchTodo.self),
                  edited.insert(todo.id).inserted else { continue }
            todo.title += " (edited \(variant))"
            target[section].cells[position] = CellNode(todo)
        }
        return target
    }

    /// `source` with `count` random cells taken out and put back at random places.
    static func moving(_ source: [Section], count: Int, random: inout InputRandom) -> [Section] {
        var target = source
        var taken: [CellNode] = []
        for _ in 0 ..< count {
            let section = random.below(target.count)
            taken.append(target[section].cells.remove(at: random.below(target[section].cells.count)))
        }
        for node in taken {
            let section = random.below(target.count)
            target[section].cells.insert(node, at: random.below(target[section].cells.count + 1))
        }
        return target
    }

    /// `source` with `count` sections of new cells (numbered from `firstCell`) inserted at random places.
    static func insertingSections(_ source: [Section], count: Int, firstCell: Int, random: inout InputRandom) -> [Section] {
        var target = source
        for index in 0 ..< count {
            let first = firstCell + index * cellsPerSection
            let inserted = section(source.count + index, id: "new\(first)", cells: Array(first ..< (first + cellsPerSection)))
            target.insert(inserted, at: random.below(target.count + 1))
        }
        return target
    }
}
