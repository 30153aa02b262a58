import LiveList
import LiveListEngine
import LiveListHTML

// The part of the ListStore contract about patches (PATCH, and PUTs that change only contents), checked
// through a registry on the store: what a patch makes is what a PUT of its result makes, and what a store
// keeps of patches (a log, compactions) loads as the same list.

extension ListStoreContract {
    /// Random patch sequences against PUTs of their results, with reopenings.
    func checkPatches() async throws {
        try await withSession { session in
            let names = ContractNames()
            let (patched, twin) = (ListName(names("patched"))!, ListName(names("twin"))!)
            let seed = UInt64.random(in: 0 ... .max)
            print("ListStoreContract \(label) patches: seed \(seed)")
            var random = SplitMix64(seed: seed)
            var store = try await session.open()
            var registry = try await ListRegistry(store: store)
            let (initial, _) = makeStatePair(using: &random)
            _ = try await registry.put(patched, body: initial.encoded())
            _ = try await registry.put(twin, body: initial.encoded())
            var page = try ListModel(try await snapshot(of: patched, in: registry).rendering)
            var pages: [Int: ListModel] = [:]
            for step in 1 ... 60 {
                let before = try await snapshot(of: patched, in: registry)
                pages[before.version] = page
                let state = try JSONListState.decode(before.state ?? [], limits: .unlimited)
                let patch = makePatch(for: state, using: &random)
                var expected = JSONListDocument(state)
                _ = try expected.apply(patch, limits: .unlimited)
                let context = "seed \(seed), step \(step), patch \(String(decoding: patch.encoded(), as: UTF8.self))"
                let (write, _) = try await registry.patch(patched, patch)
                let after = try await snapshot(of: patched, in: registry)
                let afterState = try JSONListState.decode(after.state ?? [], limits: .unlimited)
                try ensure(afterState == expected.state, "\(context): the state after the patch is not the patch's result")
                try ensure(expected.state == state ? write.version == before.version : write.version == before.version + 1,
                           "\(context): version \(write.version) after \(before.version)")
                try ensure(write.changeset.from == before.version, "\(context): the changeset starts at \(write.changeset.from)")
                try page.apply(write.changeset)
                try ensure(page == (try ListModel(after.rendering)), "\(context): the changeset does not bring the page to the snapshot")
                // A diff of the whole list, as a PUT of the result made it before patches existed.
                let differ = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "diff"))
                try differ.render(state.listSections)
                let diff = try differ.render(expected.state.listSections)
                try ensure(write.changeset.operations.count <= (diff?.operations.count ?? 0),
                           "\(context): \(write.changeset.operations.count) operations, a diff makes \(diff?.operations.count ?? 0)")
                // The twin, written whole.
                let put = try await registry.put(twin, body: expected.state.encoded())
                let twinAfter = try await snapshot(of: twin, in: registry)
                try ensure(twinAfter.rendering == after.rendering && twinAfter.version == after.version && put.version == write.version,
                           "\(context): the PUT of the same result renders otherwise")
                if step % 20 == 0 {
                    store = try await session.reopen(store)
                    registry = try await ListRegistry(store: store)
                    let reopened = try await snapshot(of: patched, in: registry)
                    try ensure(reopened.version == after.version && reopened.state == after.state && reopened.rendering == after.rendering,
                               "\(context): the store opened anew loads version \(reopened.version) (\(after.version)) otherwise: state \(reopened.state == after.state), rendering \(reopened.rendering == after.rendering) \(reopened.rendering) \(after.rendering)")
                    pages = [:]
                }
            }
            // Catch-ups from each recent version bring its page to the current one.
            let current = try await snapshot(of: patched, in: registry)
            let list = try ensureList(patched, in: registry)
            for (version, old) in pages where version != current.version {
                var caughtUp = old
                try caughtUp.apply(await list.changes(since: version))
                try ensure(caughtUp == (try ListModel(current.rendering)), "seed \(seed): the catch-up from \(version) does not reach \(current.version)")
            }
        }
    }

    /// Two processes patching one list in turn.
    func checkPatchesFollowed() async throws {
        try await withSession { session in
            let name = ListName(ContractNames()("followed"))!
            let seed = UInt64.random(in: 0 ... .max)
            print("ListStoreContract \(label) patchesFollowed: seed \(seed)")
            var random = SplitMix64(seed: seed)
            let a = try await ListRegistry(store: try await openShared(session))
            let b = try await ListRegistry(store: try await openShared(session))
            let (initial, _) = makeStatePair(using: &random)
            _ = try await a.put(name, body: initial.encoded())
            var versions: [Int] = []
            for step in 1 ... 40 {
                let (writer, reader) = step % 3 == 0 ? (b, a) : (a, b)
                await writer.catchUpEverything(log: { _ in })
                let before = try await snapshot(of: name, in: writer)
                let state = try JSONListState.decode(before.state ?? [], limits: .unlimited)
                let patch = makePatch(for: state, using: &random)
                _ = try await writer.patch(name, patch)
                await reader.catchUpEverything(log: { _ in })
                let (written, read) = (try await snapshot(of: name, in: writer), try await snapshot(of: name, in: reader))
                try ensure(read.version == written.version && read.state == written.state && read.rendering == written.rendering,
                           "seed \(seed), step \(step): the other process is at \(read.version) with another list than \(written.version)")
                versions.append(before.version)
            }
            let (listA, listB) = (try ensureList(name, in: a), try ensureList(name, in: b))
            for version in versions.suffix(8) {
                let (fromA, fromB) = (await listA.changes(since: version).encodedJSON(), await listB.changes(since: version).encodedJSON())
                try ensure(fromA == fromB, "seed \(seed): the catch-ups from \(version) differ between the processes")
            }
            let third = try await ListRegistry(store: try await openShared(session))
            let (loaded, latest) = (try await snapshot(of: name, in: third), try await snapshot(of: name, in: a))
            try ensure(loaded.version == latest.version && loaded.state == latest.state && loaded.rendering == latest.rendering,
                       "seed \(seed): a store opened afterwards loads version \(loaded.version) otherwise")
        }
    }

    private func ensureList(_ name: ListName, in registry: ListRegistry) throws -> any ServedList {
        guard let list = registry.existingList(name) else { throw violation("\(name) does not exist") }
        return list
    }

    private func snapshot(of name: ListName, in registry: ListRegistry) async throws -> ListSnapshot {
        try await ensureList(name, in: registry).snapshot(for: .anonymous)
    }
}
