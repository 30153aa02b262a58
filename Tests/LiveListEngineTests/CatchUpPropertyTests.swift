import Foundation
import LiveListHTML
@testable import LiveListEngine
import LiveListTestSupport
import Testing

/// A random JSON list that changes by random edits: cells reordered, moved across sections, inserted,
/// deleted and re-inserted under an old key, re-texted; sections inserted, deleted, re-created under an
/// old key, moved, and their headers and footers changed.
struct RandomHistory {
    struct Cell { var id: String; var text: String }
    struct Section { var id: String; var header: String?; var cells: [Cell] }

    var sections: [Section] = []
    let cellKeys: [String]
    let sectionKeys: [String]

    init(cells: Int, sections: Int) {
        // A few hostile keys: escaping must not matter to the compaction.
        cellKeys = (0 ..< cells).map { $0 % 17 == 3 ? "c\($0) \(hostileStrings[$0 % hostileStrings.count])" : "c\($0)" }
        sectionKeys = (0 ..< sections).map { "s\($0)" }
    }

    mutating func edit(using random: inout SplitMix64) {
        let edits = Int.random(in: 1 ... 6, using: &random)
        for _ in 0 ..< edits {
            let used = Set(sections.flatMap { $0.cells.map(\.id) })
            let usedSections = Set(sections.map(\.id))
            let text = { (random: inout SplitMix64) in "t\(Int.random(in: 0 ..< 4, using: &random))" }
            switch Int.random(in: 0 ..< 10, using: &random) {
            case 0 where usedSections.count < sectionKeys.count:
                let id = sectionKeys.filter { !usedSections.contains($0) }.randomElement(using: &random)!
                let header: String? = Bool.random(using: &random) ? "H\(Int.random(in: 0 ..< 3, using: &random))" : nil
                sections.insert(Section(id: id, header: header, cells: []), at: Int.random(in: 0 ... sections.count, using: &random))
            case 1 where !sections.isEmpty:
                sections.remove(at: Int.random(in: 0 ..< sections.count, using: &random))
            case 2 where sections.count > 1:
                let section = sections.remove(at: Int.random(in: 0 ..< sections.count, using: &random))
                sections.insert(section, at: Int.random(in: 0 ... sections.count, using: &random))
            case 3 where !sections.isEmpty:
                let index = Int.random(in: 0 ..< sections.count, using: &random)
                sections[index].header = Bool.random(using: &random) ? "H\(Int.random(in: 0 ..< 3, using: &random))" : nil
            case 4, 5:
                // Cross-section or in-section moves, several at once.
                for _ in 0 ..< Int.random(in: 1 ... 4, using: &random) {
                    guard let from = sections.indices.filter({ !sections[$0].cells.isEmpty }).randomElement(using: &random) else { break }
                    let cell = sections[from].cells.remove(at: Int.random(in: 0 ..< sections[from].cells.count, using: &random))
                    let to = Int.random(in: 0 ..< sections.count, using: &random)
                    sections[to].cells.insert(cell, at: Int.random(in: 0 ... sections[to].cells.count, using: &random))
                }
            case 6 where !sections.isEmpty && used.count < cellKeys.count:
                for _ in 0 ..< Int.random(in: 1 ... 3, using: &random) {
                    let free = cellKeys.filter { key in !sections.contains { $0.cells.contains { $0.id == key } } }
                    guard let id = free.randomElement(using: &random) else { break }
                    let to = Int.random(in: 0 ..< sections.count, using: &random)
                    sections[to].cells.insert(Cell(id: id, text: text(&random)), at: Int.random(in: 0 ... sections[to].cells.count, using: &random))
                }
            case 7:
                for _ in 0 ..< Int.random(in: 1 ... 3, using: &random) {
                    guard let from = sections.indices.filter({ !sections[$0].cells.isEmpty }).randomElement(using: &random) else { break }
                    sections[from].cells.remove(at: Int.random(in: 0 ..< sections[from].cells.count, using: &random))
                }
            default:
                for _ in 0 ..< Int.random(in: 1 ... 4, using: &random) {
                    guard let from = sections.indices.filter({ !sections[$0].cells.isEmpty }).randomElement(using: &random) else { break }
                    let index = Int.random(in: 0 ..< sections[from].cells.count, using: &random)
                    sections[from].cells[index].text = text(&random)
                }
            }
        }
    }

    /// Fills the list: every section key, cells spread over them.
    mutating func fill(cells count: Int, using random: inout SplitMix64) {
        sections = sectionKeys.map { Section(id: $0, header: nil, cells: []) }
        for id in cellKeys.prefix(count) {
            let to = Int.random(in: 0 ..< sections.count, using: &random)
            sections[to].cells.append(Cell(id: id, text: "t0"))
        }
    }

    /// The PUT body.
    var body: [UInt8] {
        let sections = self.sections.map { section in
            let cells = section.cells.map { "{\"id\":\(json($0.id)),\"text\":\(json($0.text))}" }.joined(separator: ",")
            let header = section.header.map { ",\"header\":\(json($0))" } ?? ""
            return "{\"id\":\(json(section.id))\(header),\"cells\":[\(cells)]}"
        }
        return Array("{\"sections\":[\(sections.joined(separator: ","))]}".utf8)
    }
}

/// A JSON string literal.
func json(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

@Suite struct CatchUpPropertyTests {
    /// For random histories and random versions V1 < V2 in the log, the catch-up from V1 (taken when
    /// the list is at V2) is a diff, applies to the snapshot at V1 to give the snapshot at V2, and has
    /// no more operations than the plain join of the logged changesets. Prints the average sizes.
    @Test func compactedCatchUpsTakeEveryVersionToTheCurrentOne() async throws {
        var sizes = (compacted: 0, plain: 0, snapshot: 0, reset: 0, count: 0, operations: 0, plainOperations: 0)
        var fellBack = 0
        for round in 0 ..< 16 {
            let seed = UInt64(round) &* 0x9E37_79B9 &+ 13
            var random = SplitMix64(seed: seed)
            print("CatchUpPropertyTests seed \(seed)")
            var configuration = ListConfiguration()
            configuration.logCount = Int.random(in: 8 ... 40, using: &random)
            let store = MemoryListStore()
            var history = RandomHistory(cells: 60, sections: 6)
            history.fill(cells: 40, using: &random)
            var registry = try await ListRegistry(store: store, configuration: configuration)
            _ = try await registry.put(listName("p"), body: history.body, ifMatch: nil)
            if round % 2 == 1 {
                // Half the lists are loaded from the store: their log starts at a non-empty state.
                history.edit(using: &random)
                _ = try await registry.put(listName("p"), body: history.body, ifMatch: nil)
                registry = try await ListRegistry(store: store, configuration: configuration)
            }
            let list = try #require(registry.existingList(listName("p")))
            var models: [Int: ListModel] = [:]
            var changesets: [Int: ListChangeset] = [:]  // by `from`
            let first = await list.version
            models[first] = try ListModel(await list.snapshot().rendering)
            for _ in 0 ..< 60 {
                history.edit(using: &random)
                let changeset = try await registry.put(listName("p"), body: history.body, ifMatch: nil).changeset
                guard changeset.version > changeset.from else { continue }
                changesets[changeset.from] = changeset
                let current = await list.version
                models[current] = try ListModel(await list.snapshot().rendering)
                // Catch-ups from a few random versions the log still holds.
                let oldest = max(first, current - configuration.logCount)
                for _ in 0 ..< 3 {
                    let since = Int.random(in: oldest ..< current, using: &random)
                    let catchUp = await list.changes(since: since)
                    let context = "seed \(seed), since \(since), current \(current)"
                    #expect(!catchUp.isReset, "a reset while the log holds the version: \(context)")
                    #expect(catchUp.from == since && catchUp.version == current, "\(context)")
                    var model = try #require(models[since])
                    do {
                        try model.apply(decodeChangeset(catchUp.encodedJSON()))
                    } catch {
                        Issue.record("\(context): \(error)")
                        continue
                    }
                    #expect(model == models[current], "\(context)")
                    let joined = ListChangeset.joining((since ..< current).compactMap { changesets[$0] }, animatableChangeCount: 300)
                    #expect(joined.from == since && joined.version == current, "\(context): the test lost a changeset")
                    #expect(catchUp.operations.count <= joined.operations.count, "\(context)")
                    if catchUp.operations == joined.operations && current - since > 1 {
                        fellBack += 1
                    }
                    sizes.compacted += catchUp.encodedJSON().count
                    sizes.plain += joined.encodedJSON().count
                    sizes.snapshot += await list.snapshotJSON().count
                    sizes.reset += await list.snapshot().reset(from: since).encodedJSON().count
                    sizes.operations += catchUp.operations.count
                    sizes.plainOperations += joined.operations.count
                    sizes.count += 1
                }
            }
        }
        #expect(sizes.count > 0, "some catch-ups were checked")
        let average = { (total: Int) in total / max(1, sizes.count) }
        print("""
            CatchUpPropertyTests: \(sizes.count) catch-ups (60 cells, 6 sections), average bytes of JSON: \
            compacted \(average(sizes.compacted)), plain join \(average(sizes.plain)), \
            snapshot \(average(sizes.snapshot)) (as a reset \(average(sizes.reset))); average operations: \
            compacted \(Double(sizes.operations) / Double(max(1, sizes.count))), \
            plain join \(Double(sizes.plainOperations) / Double(max(1, sizes.count))); \
            \(fellBack) equal to the plain join
            """)
    }
}
