import Foundation
@testable import LiveListHTML
import LiveListTestSupport
import Testing

/// Writes real changesets and snapshots, from random hostile states and patches of them, and the
/// patches' bodies, as JSON files for
/// `Tools/python/livelist_tools/checks/protocol.py`, which validates them against the schemas in docs/schemas/. Runs when
/// LIVELIST_PROTOCOL_SAMPLES names a directory (Scripts/test sets it); otherwise it only checks that
/// samples can be made.
@Suite struct ProtocolSamplesTests {
    @Test func writeSamples() throws {
        var changesets: [[UInt8]] = []
        var snapshots: [[UInt8]] = []
        // {"before": snapshot, "changeset": changeset, "after": snapshot}: for the browser tests, which
        // apply each changeset to a page built from `before` and compare with a page built from `after`.
        var chains: [[UInt8]] = []
        var patches: [[UInt8]] = []
        var random = SplitMix64(seed: 2026)
        for round in 0 ..< 200 {
            let (first, second) = makeStatePair(using: &random)
            let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "samples.\(round)"))
            for state in [first, second] {
                let before = renderer.updater.snapshot.encodedJSON()
                if let changeset = try renderer.render(state.listSections) {
                    changesets.append(changeset.encodedJSON())
                    chains.append(Array("{\"before\":".utf8) + before + Array(",\"changeset\":".utf8)
                        + changeset.encodedJSON() + Array(",\"after\":".utf8) + renderer.updater.snapshot.encodedJSON() + [0x7D])
                }
                var snapshot = renderer.updater.snapshot
                snapshot.state = Array(try putBody(state).utf8)
                snapshots.append(snapshot.encodedJSON())
                changesets.append(snapshot.reset(from: 0).encodedJSON())
                // The same reset as a windowed list (of more cells than 2) encodes it.
                changesets.append(snapshot.reset(from: 0, windowAbove: 2).encodedJSON())
            }
            // The body must decode back to the same state: the snapshot's state can be PUT again.
            #expect(try JSONListState.decode(Array(try putBody(second).utf8)) == second)
            // Patches of the second state, rendered as a JSON list renders them: only what they name
            // when that makes no more operations than a diff, else whole.
            var document = JSONListDocument(second)
            for _ in 0 ..< 3 {
                let patch = makePatch(for: document.state, using: &random)
                patches.append(patch.encoded())
                let before = renderer.updater.snapshot.encodedJSON()
                let applied = try document.apply(patch, limits: .unlimited)
                let changeset: ListChangeset?
                if applied.minimal {
                    changeset = try renderer.modify { (data: inout [Section], updater: inout PatchUpdater, adapter: HTMLAdapter) throws(RenderError) -> ListChangeset? in
                        try updater.apply(applied.effects, adapter: adapter, data: &data)
                    }
                } else {
                    changeset = try renderer.render(document.state.listSections)
                }
                if let changeset {
                    changesets.append(changeset.encodedJSON())
                    chains.append(Array("{\"before\":".utf8) + before + Array(",\"changeset\":".utf8)
                        + changeset.encodedJSON() + Array(",\"after\":".utf8) + renderer.updater.snapshot.encodedJSON() + [0x7D])
                }
                var snapshot = renderer.updater.snapshot
                snapshot.state = document.state.encoded()
                snapshots.append(snapshot.encodedJSON())
            }
        }
        #expect(changesets.count > 800 && snapshots.count == 1_000 && patches.count == 600)
        guard let directory = ProcessInfo.processInfo.environment["LIVELIST_PROTOCOL_SAMPLES"] else {
            return
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try write(changesets, to: directory + "/changesets.jsonl")
        try write(snapshots, to: directory + "/snapshots.jsonl")
        try write(chains, to: directory + "/chains.jsonl")
        try write(patches, to: directory + "/patches.jsonl")
    }

    private func write(_ lines: [[UInt8]], to path: String) throws {
        var data = Data()
        for line in lines {
            data.append(contentsOf: line)
            data.append(0x0A)
        }
        try data.write(to: URL(fileURLWithPath: path))
    }
}
