import LiveListEngine

// A shared store riding out a restart of its database: its own check, because it stops the database
// that every other check of the run uses (run it alone: a serialized suite), and takes seconds.

extension ListStoreContract {
    /// A shared store rides out a restart of its database: once the database is stopped, its calls are
    /// refused as ``StoreError/Kind/unavailable`` within its timeout, its ``ListStore/health`` turns
    /// unreachable and then calls fail at once; once the database is started again, it writes within
    /// 30 s, turns reachable again, and its ``ListStore/notices()`` yield `.reconnected` again (notices
    /// may have been missed, so every list catches up).
    ///
    /// - Parameters:
    ///   - stopDatabase: Stops the database (cutting its connections, as a crash or a restart does) and
    ///     returns once it is down.
    ///   - startDatabase: Starts it again and returns once it accepts connections. Called whatever
    ///     happens once `stopDatabase` was.
    public func checkReconnection(
        stopDatabase: @escaping @Sendable () async throws -> Void,
        startDatabase: @escaping @Sendable () async throws -> Void
    ) async throws {
        try await withSession { session in
            let name = ContractNames()("restart")
            let store = try await openShared(session)
            let recorder = NoticeRecorder(store)
            defer { recorder.stop() }
            let listening = await becomesTrue(within: .seconds(5)) { recorder.notices.contains(.reconnected) }
            try ensure(listening, "notices() did not start with .reconnected within 5 s (got \(recorder.notices))")
            try await storeCall { try store.saveJSONList(name: name, version: 1, body: jsonBody(["1"])) }
            do {
                try await stopDatabase()
                try await ensureUnavailable(store, name)
            } catch {
                try? await startDatabase()
                throw error
            }
            try await startDatabase()
            try await ensureRecovered(store, name, recorder)
        }
    }

    /// With the database stopped: writes are refused as unavailable (each within the store's timeout),
    /// health turns unreachable, and then calls fail at once.
    func ensureUnavailable(_ store: any ListStore, _ name: String) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(15)
        var seen: [String] = []
        while true {
            let started = clock.now
            let error = await storeAttempt { try store.saveJSONList(name: name, version: 2, body: jsonBody(["2"])) }
            let took = clock.now - started
            try ensure(took < .seconds(10), "a write waited \(took) with the database down, beyond the store's timeout")
            guard let error else {
                throw violation("a write succeeded with the database stopped")
            }
            if error.kind == .unavailable { break }
            seen.append("\(error.kind): \(error)")
            try ensure(clock.now < deadline, "writes with the database stopped were never refused as unavailable: \(seen)")
            try await Task.sleep(for: .milliseconds(200))
        }
        let noticed = await becomesTrue(within: .seconds(10)) { !store.health.isReachable }
        try ensure(noticed, "health stayed reachable for 10 s with the database stopped: \(store.health)")
        let started = clock.now
        let error = await storeAttempt { try store.saveJSONList(name: name, version: 2, body: jsonBody(["2"])) }
        let took = clock.now - started
        try ensure(
            error?.kind == .unavailable && took < .seconds(1),
            "a write once the store knew the database down answered \(String(describing: error)) after \(took), not unavailable at once")
    }

    /// With the database started again: a write at the list's next version succeeds within 30 s, and
    /// the store turns reachable and notices its reconnection.
    func ensureRecovered(_ store: any ListStore, _ name: String, _ recorder: NoticeRecorder) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        var version = 0
        var last: StoreError?
        while version == 0 {
            do {
                let versions = try await storeCall { try store.versions() }
                let next = (versions[name] ?? 0) + 1
                try await storeCall { try store.saveJSONList(name: name, version: next, body: jsonBody(["\(next)"])) }
                version = next
            } catch let error as StoreError {
                last = error
            } catch {
                last = StoreError("not a StoreError: \(error)")
            }
            if version == 0 {
                try ensure(clock.now < deadline, "writes still fail 30 s after the database started again: \(String(describing: last))")
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        let loaded = try await storeCall { try store.load() }
        try ensureEqual(
            loaded.jsonLists[name], StoredLists.JSONList(version: version, body: jsonBody(["\(version)"])),
            "load() after the write that followed the restart")
        let reachable = await becomesTrue(within: .seconds(10)) { store.health.isReachable }
        try ensure(reachable, "health is still unreachable 10 s after a write succeeded: \(store.health)")
        let reconnected = await becomesTrue(within: .seconds(10)) { recorder.notices.filter { $0 == .reconnected }.count >= 2 }
        try ensure(reconnected, "notices() yielded no .reconnected after the restart: \(recorder.notices)")
    }
}
