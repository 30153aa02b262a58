@testable import LiveListHTML
import Testing

/// Random pairs of JSON list states with hostile keys and text: the changeset applied to the snapshot
/// it came from gives the next snapshot, HTML included; its JSON parses back to the same operations.
@Suite struct PatchPropertyTests {
    @Test("5,000 random state pairs", arguments: 0 ..< 4)
    func randomPairs(shard: Int) throws {
        for round in 0 ..< 1_250 {
            let seed = UInt64(shard * 1_250 + round) &* 0x2545_F491 &+ 7
            var random = SplitMix64(seed: seed)
            let (first, second) = makeStatePair(using: &random)
            do {
                try check(first, second)
            } catch {
                Issue.record("seed \(seed): \(error)\nfirst: \(first)\nsecond: \(second)")
                return
            }
        }
    }

    func check(_ first: JSONListState, _ second: JSONListState) throws {
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "l", version: 3))
        var model = try ListModel(RenderedList())

        let created = try renderer.render(first.listSections)
        if let created {
            try expectOneLine(created)
            try model.apply(created)
        }
        let firstSnapshot = renderer.updater.snapshot
        guard try model == ListModel(firstSnapshot.rendering) else {
            throw ModelError("creating: model \(model) differs from \(firstSnapshot.rendering.sections.map(\.key))")
        }
        guard firstSnapshot.rendering == (try HTMLAdapter().render(first.listSections)) else {
            throw ModelError("the kept rendering differs from a fresh one")
        }

        let changeset = try renderer.render(second.listSections)
        let secondSnapshot = renderer.updater.snapshot
        guard let changeset else {
            guard secondSnapshot.version == firstSnapshot.version, secondSnapshot.rendering == firstSnapshot.rendering else {
                throw ModelError("no changeset, yet the rendering changed")
            }
            return
        }
        guard changeset.from == firstSnapshot.version, changeset.version == firstSnapshot.version + 1 else {
            throw ModelError("versions \(changeset.from) → \(changeset.version) after \(firstSnapshot.version)")
        }
        try expectOneLine(changeset)
        try model.apply(changeset)
        let expected = try ListModel(secondSnapshot.rendering)
        guard model == expected else {
            throw ModelError("applied \(changeset.operations.map(\.name)): \(model) instead of \(expected)")
        }
        guard secondSnapshot.rendering == (try HTMLAdapter().render(second.listSections)) else {
            throw ModelError("the kept rendering differs from a fresh one")
        }
    }

    /// The JSON is one line (for SSE), parses, and names every operation with all of its fields.
    func expectOneLine(_ changeset: ListChangeset) throws {
        let bytes = changeset.encodedJSON()
        guard !bytes.contains(0x0A), !bytes.contains(0x0D) else {
            throw ModelError("changeset JSON spans lines")
        }
        let decoded = try decodeChangeset(bytes)
        guard decoded == changeset else {
            throw ModelError("JSON round trip differs")
        }
    }
}

/// A random state of up to 5 sections of up to 8 cells, keys and texts drawn partly from the hostile
/// corpus, and a second state made from it by random edits (or unrelated, identical, or empty).
func makeStatePair(using random: inout SplitMix64) -> (JSONListState, JSONListState) {
    var counter = 0
    func freshKey() -> String {
        counter += 1
        if Int.random(in: 0 ..< 3, using: &random) == 0 {
            return hostileStrings[Int.random(in: 0 ..< hostileStrings.count, using: &random)] + "#\(counter)"
        }
        return "k\(counter)"
    }
    func text() -> String {
        Int.random(in: 0 ..< 3, using: &random) == 0
            ? hostileStrings[Int.random(in: 0 ..< hostileStrings.count, using: &random)]
            : "t\(Int.random(in: 0 ..< 4, using: &random))"
    }
    func optionalText() -> String? {
        Bool.random(using: &random) ? text() : nil
    }
    func makeCell() -> JSONListState.Cell {
        JSONListState.Cell(id: freshKey(), text: text(), detail: Int.random(in: 0 ..< 4, using: &random) == 0 ? text() : nil)
    }
    let first = JSONListState(sections: (0 ..< Int.random(in: 0 ... 5, using: &random)).map { _ in
        JSONListState.Section(
            id: freshKey(), header: optionalText(), footer: optionalText(),
            cells: (0 ..< Int.random(in: 0 ... 8, using: &random)).map { _ in makeCell() }
        )
    })
    switch random.next() % 12 {
    case 0: return (first, first)
    case 1: return (first, JSONListState(sections: []))
    default: break
    }
    var sections = first.sections.filter { _ in Int.random(in: 0 ..< 5, using: &random) != 0 }
    for _ in 0 ..< Int.random(in: 0 ... 2, using: &random) {
        sections.insert(
            JSONListState.Section(id: freshKey(), header: optionalText(), footer: optionalText(), cells: []),
            at: Int.random(in: 0 ... sections.count, using: &random)
        )
    }
    if Int.random(in: 0 ..< 3, using: &random) == 0 { sections.shuffle(using: &random) }
    for index in sections.indices where Int.random(in: 0 ..< 4, using: &random) == 0 {
        if Bool.random(using: &random) { sections[index].header = optionalText() } else { sections[index].footer = optionalText() }
    }
    var pool = first.sections.flatMap(\.cells).filter { _ in Int.random(in: 0 ..< 4, using: &random) != 0 }
    for index in pool.indices where Int.random(in: 0 ..< 4, using: &random) == 0 {
        pool[index].text = text()
    }
    for _ in 0 ..< Int.random(in: 0 ... 5, using: &random) { pool.append(makeCell()) }
    guard !sections.isEmpty else { return (first, JSONListState(sections: [])) }
    let homes = Dictionary(first.sections.flatMap { section in section.cells.map { ($0.id, section.id) } }, uniquingKeysWith: { a, _ in a })
    for index in sections.indices { sections[index].cells = [] }
    for cell in pool {
        let home = homes[cell.id].flatMap { id in sections.firstIndex { $0.id == id } }
        let index = home.flatMap { Int.random(in: 0 ..< 4, using: &random) == 0 ? nil : $0 }
            ?? Int.random(in: 0 ..< sections.count, using: &random)
        sections[index].cells.append(cell)
    }
    for index in sections.indices where Int.random(in: 0 ..< 3, using: &random) == 0 {
        sections[index].cells.shuffle(using: &random)
    }
    return (first, JSONListState(sections: sections))
}
