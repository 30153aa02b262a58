// JSONPatch: applying keyed patches (the body of `PATCH /lists/NAME`) to a JSON-driven list of N and 8N
// cells (100 cells to a section).
//
//   applying small      JSONListState.applying([patch]) with a patch of 10 operations (6 updates, 2
//                       inserts, 1 remove, 1 section header): what a store pays to bring a list up to
//                       date; it indexes the whole list first.
//   applying big        the same with 1,000 operations (500 updates, 200 inserts, 150 removes, 150
//                       moves).
//   document small      JSONListDocument.apply(_:limits:) of 10 operations on a live document, in place
//                       (the server's PATCH): an insert and its removal alternate, so the list stays
//                       the same size.
//   store replay        StoredLists.JSONList.applying(_:what:): decode a stored body and 16 encoded
//                       small patches, apply them, encode the result.

import Benchmark
import LiveListEngine
import LiveListHTML

func jsonPatchBenchmarks() {
    for cells in [10_000, 80_000] {
        let size = sizeName(cells)
        Benchmark(
            "JSONPatch applying small patch, \(size) cells",
            configuration: hotPathConfiguration(iterations: 200)
        ) { (benchmark: Benchmark, fixture: JSONPatchFixture) throws in
            let patch = fixture.smallPatches[benchmark.currentIteration % fixture.smallPatches.count]
            for _ in benchmark.scaledIterations {
                blackHole(try fixture.state.applying([patch]))
            }
        } setup: {
            try JSONPatchFixture(cells: cells)
        }

        Benchmark(
            "JSONPatch applying big patch, \(size) cells",
            configuration: hotPathConfiguration(iterations: 100)
        ) { (benchmark: Benchmark, fixture: JSONPatchFixture) throws in
            let patch = fixture.bigPatches[benchmark.currentIteration % fixture.bigPatches.count]
            for _ in benchmark.scaledIterations {
                blackHole(try fixture.state.applying([patch]))
            }
        } setup: {
            try JSONPatchFixture(cells: cells)
        }

        Benchmark(
            "JSONPatch document small patch in place, \(size) cells",
            configuration: hotPathConfiguration(iterations: 5_000)
        ) { (benchmark: Benchmark, live: LiveDocument) throws in
            for _ in benchmark.scaledIterations {
                blackHole(try live.applyNext())
            }
        } setup: {
            try LiveDocument(JSONPatchFixture(cells: cells))
        }

        Benchmark(
            "JSONPatch store replay of 16 patches, \(size) cells",
            configuration: hotPathConfiguration(iterations: 50)
        ) { (benchmark: Benchmark, stored: StoredReplay) throws in
            let patches = stored.patchSets[benchmark.currentIteration % stored.patchSets.count]
            for _ in benchmark.scaledIterations {
                blackHole(try stored.list.applying(patches, what: "bench"))
            }
        } setup: {
            try StoredReplay(JSONPatchFixture(cells: cells))
        }
    }
}

/// A list of `cells` cells and patches for it. Cell ids are split into *anchors*, which no patch
/// removes or moves (inserts and moves go after them, in their sections), and the *pool*, from which
/// every patch takes cells of its own to update, remove or move: the patches of one fixture apply in
/// any order and any number, each to the list as the others left it.
struct JSONPatchFixture {
    static let cellsPerSection = 100

    let state: JSONListState
    private(set) var smallPatches: [JSONListPatch] = []
    private(set) var bigPatches: [JSONListPatch] = []
    private var anchors: [(id: String, section: String)] = []
    private var pool: [String] = []
    private var poolUsed = 0
    private var inserted = 0
    private var random: InputRandom

    init(cells: Int, seed: UInt64 = 7) throws {
        random = InputRandom(seed: seed)
        let sectionCount = cells / Self.cellsPerSection
        var sections: [JSONListState.Section] = []
        var places: [(id: String, section: String)] = []
        for section in 0 ..< sectionCount {
            let sectionID = "s\(section)"
            let sectionCells = (0 ..< Self.cellsPerSection).map { index -> JSONListState.Cell in
                let number = section * Self.cellsPerSection + index
                return JSONListState.Cell(
                    id: "c\(number)", text: "Task \(number): buy \"milk\" & <eggs>",
                    detail: number % 3 == 0 ? "added by ops" : nil
                )
            }
            places += sectionCells.map { ($0.id, sectionID) }
            sections.append(JSONListState.Section(id: sectionID, header: "Section \(section)", cells: sectionCells))
        }
        state = JSONListState(sections: sections)
        for index in stride(from: places.count - 1, through: 1, by: -1) {
            places.swapAt(index, random.below(index + 1))
        }
        anchors = Array(places[..<(places.count / 4)])
        pool = places[(places.count / 4)...].map(\.id)

        for _ in 0 ..< 24 {
            smallPatches.append(makePatch(updates: 6, inserts: 2, removes: 1, moves: 0, headers: 1))
        }
        for _ in 0 ..< 4 {
            bigPatches.append(makePatch(updates: 500, inserts: 200, removes: 150, moves: 150, headers: 0))
        }
        for patch in smallPatches.prefix(2) + bigPatches.prefix(1) {
            let next = try state.applying([patch])
            let inserts = patch.operations.count == 10 ? 2 : 200
            let removes = patch.operations.count == 10 ? 1 : 150
            try expect(next.cellCount == cells + inserts - removes, "a patch applied to \(next.cellCount) cells")
        }
    }

    /// The next `count` cells of the pool, never handed out before.
    mutating func take(_ count: Int) -> ArraySlice<String> {
        defer { poolUsed += count }
        return pool[poolUsed ..< (poolUsed + count)]
    }

    /// A cell that no patch removes or moves, and its section.
    mutating func anchor() -> (id: String, section: String) {
        anchors[random.below(anchors.count)]
    }

    /// A patch of these operations, shuffled (updates, inserts and removes do not depend on each other).
    mutating func makePatch(updates: Int, inserts: Int, removes: Int, moves: Int, headers: Int) -> JSONListPatch {
        var operations: [JSONListPatch.Operation] = []
        for id in take(updates) {
            operations.append(.update(cell: JSONListState.Cell(id: id, text: "Edited \(id) #\(random.below(1_000_000))")))
        }
        for _ in 0 ..< inserts {
            let place = anchor()
            inserted += 1
            let cell = JSONListState.Cell(id: "new\(inserted)", text: "Inserted \(inserted)", detail: "after \(place.id)")
            operations.append(.upsert(cell: cell, section: place.section, position: .after(place.id)))
        }
        for id in take(removes) {
            operations.append(.remove(cell: id))
        }
        for id in take(moves) {
            let place = anchor()
            let position: JSONListPatch.Position = random.below(4) == 0 ? .first : .after(place.id)
            operations.append(.upsert(cell: JSONListState.Cell(id: id, text: "Moved \(id)"), section: place.section, position: position))
        }
        for _ in 0 ..< headers {
            let section = state.sections[random.below(state.sections.count)].id
            operations.append(.upsertSection(id: section, header: "Header \(random.below(1_000_000))", footer: nil, position: nil))
        }
        for index in stride(from: operations.count - 1, through: 1, by: -1) {
            operations.swapAt(index, random.below(index + 1))
        }
        return JSONListPatch(operations: operations)
    }
}

/// A document kept between iterations, as the server keeps a list's, and two kinds of patch that
/// alternate: one inserts a cell and sets 9 texts, the next removes the cell and sets the same texts
/// otherwise, so that every operation changes the list and the list keeps its size.
final class LiveDocument {
    private var document: JSONListDocument
    private let inserting: [JSONListPatch]
    private let removing: [JSONListPatch]
    private var count = 0

    init(_ fixture: JSONPatchFixture) throws {
        var fixture = fixture
        document = JSONListDocument(fixture.state)
        var inserting: [JSONListPatch] = []
        var removing: [JSONListPatch] = []
        for index in 0 ..< 16 {
            let ids = fixture.take(9)
            let place = fixture.anchor()
            let cell = JSONListState.Cell(id: "live\(index)", text: "Live \(index)")
            var add = ids.map { JSONListPatch.Operation.update(cell: JSONListState.Cell(id: $0, text: "Live A \($0)")) }
            add.insert(.upsert(cell: cell, section: place.section, position: .after(place.id)), at: index % 10)
            var remove = ids.map { JSONListPatch.Operation.update(cell: JSONListState.Cell(id: $0, text: "Live B \($0)")) }
            remove.insert(.remove(cell: cell.id), at: (index * 3) % 10)
            inserting.append(JSONListPatch(operations: add))
            removing.append(JSONListPatch(operations: remove))
        }
        self.inserting = inserting
        self.removing = removing
        let cells = document.cellCount
        for _ in 0 ..< 4 * inserting.count {
            let applied = try applyNext()
            try expect(applied.effective.count == 10, "a patch changed \(applied.effective.count) of 10 operations")
        }
        try expect(document.cellCount == cells, "the document went from \(cells) to \(document.cellCount) cells")
    }

    /// Applies the next patch in place.
    func applyNext() throws -> JSONListDocument.Applied {
        defer { count += 1 }
        let patch = count % 2 == 0 ? inserting[(count / 2) % inserting.count] : removing[(count / 2) % removing.count]
        return try document.apply(patch, limits: .unlimited)
    }
}

/// A stored list (its body) and sets of 16 encoded patches to replay on it.
struct StoredReplay {
    let list: StoredLists.JSONList
    let patchSets: [[[UInt8]]]

    init(_ fixture: JSONPatchFixture) throws {
        var fixture = fixture
        list = StoredLists.JSONList(version: 1, body: fixture.state.encoded())
        var patchSets: [[[UInt8]]] = []
        for _ in 0 ..< 4 {
            var patches: [[UInt8]] = []
            for _ in 0 ..< 16 {
                patches.append(fixture.makePatch(updates: 6, inserts: 2, removes: 1, moves: 0, headers: 1).encoded())
            }
            patchSets.append(patches)
        }
        self.patchSets = patchSets
        let replayed = try list.applying(patchSets[0], what: "bench")
        let state = try JSONListState.decode(replayed.body, limits: .unlimited)
        try expect(replayed.version == 17 && state.cellCount == fixture.state.cellCount + 16,
                   "the replay reached version \(replayed.version) with \(state.cellCount) cells")
    }
}
