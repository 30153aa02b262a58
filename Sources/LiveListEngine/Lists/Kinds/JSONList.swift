public import LiveListHTML

/// A list that `PUT` and `DELETE` drive (through ``ListRegistry/put(_:body:precondition:)`` and
/// ``ListRegistry/delete(_:)``): its state is the last body stored.
///
/// A JSON list that does not exist (not created yet, or deleted: a tombstone that keeps its version)
/// is still an actor, so that creations, deletions and the streams that wait for a list are ordered
/// with everything else.
public actor JSONList: ServedList {
    public nonisolated let name: ListName
    public nonisolated var owner: ListOwner { .json }
    package nonisolated let visibility: ListVisibility
    package let core: ListCore
    private var source: JSONSource
    /// Whether the renderer's sections (`data`) lag behind the state: a patch renders only what it
    /// names, into the rendering, and leaves them, so that it does not move every cell of them too.
    /// They are rebuilt from the state before anything reads them (``refreshRendererData()``).
    private var rendererDataStale = false
    /// The idempotency keys of this list's recent writes on this process.
    private var recentKeys = RecentlyKept<IdempotentWrite>(capacity: 1_000)
    /// The list runs on a lane of its own, off the cooperative pool (its writes block on `fsync`).
    private nonisolated let executor = ListExecutor()
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        executor.asUnownedSerialExecutor()
    }

    /// Creates a list whose next version follows `version` (a name's versions are never reused); it
    /// exists once a PUT creates it or a stored body is loaded. `waiting`: the streams that waited on
    /// the name before it had a list.
    init(name: ListName, version: Int, configuration: ListConfiguration, store: any ListStore, quota: ListQuota?, waiting: [Subscription] = []) {
        self.name = name
        // Its cells compare every property: nothing a diff overlooks needs rendering again.
        var configuration = configuration
        configuration.options.alwaysRenderVisibleComponents = false
        let core = ListCore(name: name, version: version, configuration: configuration, store: store, waiting: waiting)
        self.core = core
        visibility = core.visibility
        source = JSONSource(quota: quota)
        core.owner = self
    }

    /// Outcome of a write.
    enum WriteOutcome {
        /// The list was created: this changeset took it from its high-water mark to its first version
        /// (with its JSON as published).
        case created(ListChangeset, json: [UInt8])
        /// The state changed: this changeset took the list to a new version (with its JSON as published).
        case changed(ListChangeset, json: [UInt8])
        /// The state is the same: no new version.
        case unchanged(version: Int)
        /// This actor was retired; the write must go to the registry's new actor for the name.
        case retired(version: Int)
        /// A write with this idempotency key was made before: this is what it made.
        case replayed(IdempotentWrite)
    }

    /// Loads a stored list: the list is at exactly `version`, with nothing to publish.
    func load(state: JSONListState, body: [UInt8], version: Int) throws {
        try resetRenderer(to: state.listSections, at: version)
        set(state, body: body)
        core.log.start(at: version, rendering: core.renderer.updater.snapshot.rendering)
        core.setExists(true)
    }

    private func set(_ state: JSONListState, body: [UInt8]) {
        source.set(state, body: body)
    }

    /// Rebuilds the renderer's sections from the state when a patch left them behind: before a
    /// render that diffs against them, and before an action looks a cell up in them.
    private func refreshRendererData() {
        guard rendererDataStale else { return }
        let sections = source.listSections
        core.renderer.modify { (data: inout [Section], _: inout PatchUpdater, _: HTMLAdapter) in data = sections }
        rendererDataStale = false
    }

    /// Puts the renderer at `version` showing `sections` (its sections are then up to date).
    private func resetRenderer(to sections: [Section], at version: Int) throws {
        try core.resetRenderer(to: sections, at: version)
        rendererDataStale = false
    }

    /// The root of a page that starts at the cell `key`, found in the renderer's sections brought up to
    /// date, as an action finds its cell.
    package func pageHTML(for viewer: Viewer, at key: String) -> (html: String, version: Int)? {
        refreshRendererData()
        return core.pageHTML(for: viewer, at: key)
    }

    /// Handles a browser event, with the renderer's sections up to date (its cells are found there).
    package func perform(_ action: ListAction) async -> ActionOutcome {
        refreshRendererData()
        return await performAction(action)
    }

    /// The current state in snapshot form, its `state` the list's body (encoded once after a patch).
    public func snapshot(for viewer: Viewer) -> ListSnapshot {
        core.snapshotState = source.currentBody()
        return core.snapshot(for: viewer)
    }

    package func versionedSnapshotJSON(for viewer: Viewer) -> (version: Int, bytes: [UInt8]) {
        core.snapshotState = source.currentBody()
        return core.versionedSnapshotJSON(for: viewer)
    }

    /// Creates or replaces the list's state, in the ordered path: checks `precondition`, renders,
    /// persists the body with its new version, then publishes. Nothing is published or acknowledged
    /// before the store has the body; a write that cannot be stored leaves the list as it was.
    ///
    /// With an `idempotency` key that an earlier write of this list used, nothing is written: the
    /// outcome is what that write made (``WriteOutcome/replayed(_:)``), or a refusal when the key came
    /// with another request (422 `idempotency_key_reused`).
    ///
    /// With `idsChecked` false, the state's ids were not checked for uniqueness when it was decoded
    /// (``JSONListState/decodeForPut(_:limits:)``): a state with the list's own ids in their order has
    /// unique ids; any other is checked here, and refused (422) on a repeated one.
    func put(state: JSONListState, body: [UInt8], precondition: WritePrecondition, idempotency: IdempotencyKey? = nil, idsChecked: Bool = true) throws(ListWriteError) -> WriteOutcome {
        try idempotently(idempotency) { () throws(ListWriteError) in
            try retryingStale { () throws(ListWriteError) in
                try putOnce(state: state, body: body, precondition: precondition, idempotency: idempotency, idsChecked: idsChecked)
            }
        }
    }

    /// Runs `write` unless `key` was used before (then answers what that write made), and remembers
    /// what it made under the key.
    ///
    /// A shared store is asked for the key only when the write would not go ahead as asked (another
    /// process kept the key first, its precondition no longer holds, the list is gone, or nothing
    /// would change), which is what a retry of a write that was kept meets: the happy path costs no
    /// extra round trip.
    private func idempotently(_ key: IdempotencyKey?, _ write: () throws(ListWriteError) -> WriteOutcome) throws(ListWriteError) -> WriteOutcome {
        guard let key else { return try write() }
        if let earlier = try earlierWrite(key, askingStore: false) {
            return .replayed(earlier)
        }
        let shared = core.shared != nil
        let outcome: WriteOutcome
        do {
            outcome = try write()
        } catch let error where error.idempotencyKeyUsed || (shared && [.preconditionFailed, .notFound].contains(error.kind)) {
            // A retry on another process, or racing this one, kept the key first; or this is a retry
            // of a write another process kept.
            guard let earlier = try earlierWrite(key, askingStore: true) else { throw error }
            return .replayed(earlier)
        }
        if shared, case .unchanged = outcome, let earlier = try earlierWrite(key, askingStore: true) {
            return .replayed(earlier)
        }
        switch outcome {
        case let .created(changeset, _): recentKeys.keep(IdempotentWrite(key: key, version: changeset.version, created: true), for: key.key)
        case let .changed(changeset, _): recentKeys.keep(IdempotentWrite(key: key, version: changeset.version, created: false), for: key.key)
        case let .unchanged(version): recentKeys.keep(IdempotentWrite(key: key, version: version, created: false), for: key.key)
        case .retired, .replayed: break
        }
        return outcome
    }

    /// The earlier write with `key`'s key: this process's, or the shared store's; a refusal when it
    /// came with another request.
    private func earlierWrite(_ key: IdempotencyKey, askingStore: Bool) throws(ListWriteError) -> IdempotentWrite? {
        var earlier = recentKeys[key.key]
        if earlier == nil, askingStore {
            do {
                earlier = try core.shared?.idempotentWrite(of: name.rawValue, key: key.key)
            } catch {
                throw core.storageFailed("the idempotency key could not be looked up", error)
            }
        }
        return try earlier?.replayed(for: key, on: name)
    }

    private func putOnce(state: JSONListState, body: [UInt8], precondition: WritePrecondition, idempotency: IdempotencyKey?, idsChecked: Bool) throws(ListWriteError) -> WriteOutcome {
        guard !core.isRetired else { return .retired(version: core.version) }
        let current = core.version
        let exists = source.exists
        let contentPatch = exists ? source.contentPatch(to: state) : nil
        if contentPatch == nil, !idsChecked, let duplicate = state.duplicateID() {
            throw ListWriteError(.invalid, code: duplicate.code, detail: duplicate.detail)
        }
        try source.check(precondition, version: current)
        if let patch = contentPatch {
            // Only texts, details, headers or footers differ (or nothing): the changed cells are
            // rendered and stored as a patch, and the rest of the list costs nothing.
            guard !patch.operations.isEmpty else { return .unchanged(version: current) }
            return try patchOnce(patch, precondition: .none, idempotency: idempotency, limits: nil).outcome
        }
        if source.shows(state) {
            return .unchanged(version: current)
        }
        _ = try core.nextVersion()
        try source.takePlace()
        refreshRendererData()
        let previous = core.renderer.data
        let changeset: ListChangeset
        do {
            // A list created empty renders like no list at all, yet it now exists: that is a version.
            guard let rendered = try core.renderer.render(state.listSections) ?? (exists ? nil : core.renderer.updater.advanceVersion()) else {
                return .unchanged(version: current)
            }
            changeset = rendered
            try core.store.saveJSONList(name: name.rawValue, version: changeset.version, body: body,
                                        idempotency: idempotency.map { IdempotentWrite(key: $0, version: changeset.version, created: !exists) })
        } catch {
            // Sections that rendered before render again.
            try? resetRenderer(to: previous, at: current)
            source.giveBackPlace()
            throw core.storageFailed("the list could not be stored", error)
        }
        set(state, body: body)
        core.setExists(true)
        let encoded = core.publish(changeset)
        return exists ? .changed(changeset, json: encoded) : .created(changeset, json: encoded)
    }

    /// Applies `patch` in the ordered path, all or nothing: checks `precondition`, applies the
    /// operations to the state (refusing the first that cannot apply, 422), stores the operations that
    /// changed something with the new version, then renders only what they changed and publishes. A
    /// patch that changes nothing makes no version. `skipped` counts the operations whose cell or
    /// section was missing. Idempotency keys work as for ``put(state:body:precondition:idempotency:)``.
    func patch(_ patch: JSONListPatch, precondition: WritePrecondition, idempotency: IdempotencyKey?, limits: JSONListLimits) throws(ListWriteError) -> (outcome: WriteOutcome, skipped: Int) {
        var skipped = 0
        let outcome = try idempotently(idempotency) { () throws(ListWriteError) in
            try retryingStale { () throws(ListWriteError) in
                let result = try patchOnce(patch, precondition: precondition, idempotency: idempotency, limits: limits)
                skipped = result.skipped
                return result.outcome
            }
        }
        return (outcome, skipped)
    }

    /// One attempt of a patch (`limits` nil: a PUT's content patch, already within them).
    private func patchOnce(
        _ patch: JSONListPatch, precondition: WritePrecondition, idempotency: IdempotencyKey?, limits: JSONListLimits?
    ) throws(ListWriteError) -> (outcome: WriteOutcome, skipped: Int) {
        guard !core.isRetired else { return (.retired(version: core.version), 0) }
        guard source.exists else {
            throw ListWriteError(.notFound, code: "not_found", detail: "no list named \(name)")
        }
        let current = core.version
        try source.check(precondition, version: current)
        var applied: JSONListDocument.Applied
        do {
            applied = try source.apply(patch, limits: limits ?? .unlimited)
            if !applied.minimal && rendererDataStale {
                // Rendered whole below, against the renderer's sections as they were before it.
                source.undo(applied)
                refreshRendererData()
                applied = try source.apply(patch, limits: limits ?? .unlimited)
            }
        } catch {
            throw ListWriteError(.invalid, code: error.code, detail: error.detail)
        }
        guard applied.changed else { return (.unchanged(version: current), applied.skipped) }
        // Operations that act on each other (a cell moved, or touched twice) are rendered whole and
        // diffed, before the write: their net result may be no change at all, which takes no version.
        let version: Int
        do {
            version = try core.nextVersion()
        } catch {
            source.undo(applied)
            throw error
        }
        var whole: ListChangeset?
        let previous = applied.minimal ? [] : core.renderer.data
        if !applied.minimal {
            do {
                guard let rendered = try core.renderer.render(source.listSections) else {
                    return (.unchanged(version: current), applied.skipped)
                }
                whole = rendered
            } catch {
                source.undo(applied)
                throw ListWriteError(.invalid, code: "invalid_key", detail: "the patch does not render: \(error)")
            }
        }
        do {
            try core.store.appendJSONPatch(
                name: name.rawValue, version: version, patch: JSONListPatch(operations: applied.effective).encoded(),
                idempotency: idempotency.map { IdempotentWrite(key: $0, version: version, created: false) },
                body: { source.document?.state.encoded() ?? [] })
        } catch {
            source.undo(applied)
            if whole != nil {
                try? resetRenderer(to: previous, at: current)
            }
            throw core.storageFailed("the patch could not be stored", error)
        }
        let changeset = whole ?? render(applied)
        return (.changed(changeset, json: core.publish(changeset)), applied.skipped)
    }

    /// The changeset of an applied patch whose effects make no more DOM operations than a diff would:
    /// only what it changed is rendered, in place. A version is taken (the store has it).
    private func render(_ applied: JSONListDocument.Applied) -> ListChangeset {
        do {
            let changeset = try core.renderer.modify { (data: inout [Section], updater: inout PatchUpdater, adapter: HTMLAdapter) throws(RenderError) -> ListChangeset? in
                try updater.apply(applied.effects, adapter: adapter, data: &data, updatingData: false)
            }
            rendererDataStale = true
            return changeset ?? core.renderer.updater.advanceVersion()
        } catch {
            // Not reached: every id was checked when the patch applied. Should a render fail anyway,
            // the viewers get the whole list at the new version.
            try? resetRenderer(to: source.listSections, at: core.version + 1)
            return core.renderer.updater.snapshot.reset(from: core.version - 1, windowAbove: core.configuration.options.windowAbove)
        }
    }

    /// Deletes the list: the deletion takes a version of its own (a tombstone in the store, so that a
    /// re-created list continues after it); its viewers get a final, empty reset; single-list streams
    /// then end, and multiplexed streams go on (and see the list again if it is re-created).
    func delete(idempotency: IdempotencyKey? = nil) throws(ListWriteError) -> WriteOutcome {
        try idempotently(idempotency) { () throws(ListWriteError) in
            try retryingStale { () throws(ListWriteError) in try deleteOnce(idempotency: idempotency) }
        }
    }

    private func deleteOnce(idempotency: IdempotencyKey?) throws(ListWriteError) -> WriteOutcome {
        guard !core.isRetired else { return .retired(version: core.version) }
        guard source.exists else {
            throw ListWriteError(.notFound, code: "not_found", detail: "no list named \(name)")
        }
        let final = ListChangeset(
            list: name.rawValue, from: core.version, version: try core.nextVersion(), animate: false,
            operations: [.reset(html: "", sections: [])]
        )
        do {
            try core.store.deleteJSONList(name: name.rawValue, version: final.version,
                                          idempotency: idempotency.map { IdempotentWrite(key: $0, version: final.version, created: false) })
        } catch {
            throw core.storageFailed("the deletion could not be stored", error)
        }
        return .changed(final, json: finishDeletion(final))
    }

    /// After a deletion is stored (here or by another process): the list is gone at the final
    /// changeset's version; its viewers get that final empty reset, and single-list streams end.
    /// Returns the final changeset's JSON.
    private func finishDeletion(_ final: ListChangeset) -> [UInt8] {
        source.remove()
        core.snapshotState = nil
        core.setExists(false)
        try? resetRenderer(to: [], at: final.version)
        core.log.clear()
        let encoded = EncodedChangeset(final)
        for subscription in core.subscriptions.values {
            core.send(encoded, to: subscription)
            if subscription.multiplexed == nil {
                subscription.sink.close()
                core.subscriptions.removeValue(forKey: subscription.id)
            }
        }
        return encoded.json
    }

    /// Retires the list (it does not exist) so that an app list can take its name: the streams waiting
    /// on it move to the app list.
    func retireForApp() -> (version: Int, subscriptions: [Subscription])? {
        guard !core.isRetired, !exists else { return nil }
        core.isRetired = true
        let moved = Array(core.subscriptions.values)
        core.subscriptions.removeAll()
        return (core.version, moved)
    }

    /// ``ListCore/retryingStale(_:unchanged:catchUp:)`` for this list's writes.
    private func retryingStale(_ write: () throws(ListWriteError) -> WriteOutcome) throws(ListWriteError) -> WriteOutcome {
        try core.retryingStale(write, unchanged: { outcome in
            if case .unchanged = outcome { true } else { false }
        }, catchUp: { () throws(ListWriteError) in try catchUpWithStore(noticed: nil) })
    }

    // MARK: - Other processes' writes

    /// Follows what other processes wrote to a shared store: each stored body is rendered and published
    /// as if it were written here, and a stored deletion deletes the list here too.
    package func catchUpWithStore(noticed: Int?) throws(ListWriteError) {
        try core.followStore(noticed: noticed) { step in try apply(step) }
    }

    private func apply(_ step: StoredUpdate.Step) throws {
        switch step.content {
        case let .json(body):
            // Limits are not applied to what another process accepted.
            let state = try JSONListState.decode(body, limits: .unlimited)
            refreshRendererData()
            let changeset = try core.renderer.render(state.listSections) ?? core.renderer.updater.advanceVersion()
            set(state, body: body)
            core.setExists(true)
            core.publish(core.skipping(changeset, to: step.version))
        case let .patch(bytes):
            let patch = try JSONListPatch.decode(bytes, limits: .unlimited)
            guard source.exists else {
                throw StoreError("\(name) has a stored patch at version \(step.version) but no list to apply it to")
            }
            var applied = try source.apply(patch, limits: .unlimited)
            let changeset: ListChangeset
            if !applied.changed {
                changeset = core.renderer.updater.advanceVersion()
            } else if applied.minimal {
                changeset = render(applied)
            } else {
                if rendererDataStale {
                    // Rendered whole, against the renderer's sections as they were before it.
                    source.undo(applied)
                    refreshRendererData()
                    applied = try source.apply(patch, limits: .unlimited)
                }
                changeset = try core.renderer.render(source.listSections) ?? core.renderer.updater.advanceVersion()
            }
            core.publish(core.skipping(changeset, to: step.version))
        case .deleted:
            guard source.exists else {
                try resetRenderer(to: [], at: step.version)
                return
            }
            let final = ListChangeset(list: name.rawValue, from: core.version, version: step.version, animate: false,
                                      operations: [.reset(html: "", sections: [])])
            _ = finishDeletion(final)
        case .state, .reserved:
            // Not this list's kind (a name another process uses otherwise): only its version moves on.
            core.skipVersion(to: step.version)
        }
    }
}
