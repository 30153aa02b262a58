@testable import LiveListHTML
import LiveListTestSupport
import Testing

/// Random pairs of JSON list states with hostile keys and text: the changeset applied to the snapshot
/// it came from gives the next snapshot, HTML included; its JSON parses back to the same operations.
@Suite struct PatchPropertyTests {
    /// Long and CPU-bound: it yields every few pairs, so that it never holds the cooperative pool (as
    /// many threads as cores) away from the tests of other targets that run an in-process server.
    @Test("5,000 random state pairs", arguments: 0 ..< 4)
    func randomPairs(shard: Int) async throws {
        for round in 0 ..< 1_250 {
            if round % 10 == 0 { await Task.yield() }
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

