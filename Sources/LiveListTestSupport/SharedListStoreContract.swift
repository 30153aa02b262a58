import LiveListEngine
import Synchronization

// The part of the ListStore contract that only stores shared by several processes (`SharedListStore`) have:
// stale writes refused, recent versions kept for the others within their bounds, notices, several
// stores opening one fresh database at once, leases, and riding out a database restart.

extension ListStoreContract {
    /// The checks of a shared store (a `SharedListStore`), each on two or more stores opened on the
    /// same data.
    public enum SharedCheck: String, CaseIterable, Sendable {
        /// A write whose version does not follow the stored one is refused as stale, carrying the stored
        /// version, and leaves nothing behind.
        case staleWrites
        /// `update(of:after:)` returns every version after the one asked in order while the store keeps
        /// them all (``ListStoreContract/keptVersions``, ``ListStoreContract/largestKeptContent``),
        /// else only the latest.
        case history
        /// `versions()` of any store lists every written list at its stored version, and `versions(of:)`
        /// those of the names asked.
        case versions
        /// One store's writes arrive as notices on another's `notices()`, after the `.reconnected` that
        /// says it listens; refused writes send none.
        case notices
        /// Several stores opened at once on fresh storage all open (making the schema once) and write,
        /// and racing writes of one version make exactly one winner.
        case concurrentOpening
        /// A lease is held by one store at a time, and passes on when its holder closes.
        case leases
        /// The revocations one store records are read by another, in order, after the position it
        /// started from; a store does not read back its own.
        case revocations
        /// A write's idempotency key is kept with it, in its transaction: another store finds it, and a
        /// second write with the key is refused as ``StoreError/Kind/idempotencyKeyUsed`` and changes
        /// nothing.
        case idempotency
        /// Two registries on two stores patch one list in turn: each follows the other's patches to the
        /// same states, versions and byte-identical catch-ups, and a third store opened afterwards
        /// loads the same list (compactions included).
        case patchesFollowed
        /// One store's ended sign-in reaches another's `revocations(after:)` as `.signInEnded` and its
        /// `endedSignIns(now:)`; recording it again sends no second revocation.
        case endedSignIns
    }

    /// Runs one of the checks of a shared store.
    ///
    /// - Throws: ``ContractViolation`` when the store breaks the contract (or is not shared), or the
    ///   store's own error when it fails where it should not.
    public func run(_ check: SharedCheck) async throws {
        switch check {
        case .staleWrites: try await checkStaleWrites()
        case .history: try await checkHistory()
        case .versions: try await checkVersions()
        case .notices: try await checkNotices()
        case .concurrentOpening: try await checkConcurrentOpening(stores: 6)
        case .leases: try await checkLeases()
        case .revocations: try await checkRevocations()
        case .idempotency: try await checkIdempotency()
        case .patchesFollowed: try await checkPatchesFollowed()
        case .endedSignIns: try await checkEndedSignInsShared()
        }
    }

    func openShared(_ session: StoreSession) async throws -> any ListStore {
        let store = try await session.open()
        try ensure(store.isShared, "the shared-store checks need a SharedListStore")
        return store
    }

    /// `body` is refused as `expected`.
    func ensureRefused(
        _ expected: StoreError.Kind, _ what: String, file: String = #fileID, line: Int = #line,
        _ body: @escaping @Sendable () throws -> Void
    ) async throws {
        guard let error = await storeAttempt(body) else {
            throw violation("\(what) was accepted; expected a refusal as \(expected)", file: file, line: line)
        }
        try ensure(error.kind == expected, "\(what) was refused as \(error.kind) (\(error)); expected \(expected)", file: file, line: line)
    }

    func checkStaleWrites() async throws {
        try await withSession { session in
            let name = ContractNames()("stale")
            let a = try await openShared(session)
            let b = try await openShared(session)
            let (fromA, fromB) = (jsonBody(["a"]), jsonBody(["b"]))
            try await ensureRefused(.stale(version: 0), "a first write at version 2") {
                try a.saveJSONList(name: name, version: 2, body: fromA)
            }
            let versions = try await storeCall { try b.versions() }
            try ensureEqual(versions[name], nil, "versions() after a refused first write")
            try ensureEqual(try await storeCall { try b.update(of: name, after: 0) }, nil, "update(of:after:) after a refused first write")
            try await storeCall { try a.saveJSONList(name: name, version: 1, body: fromA) }
            try await ensureRefused(.stale(version: 1), "another store's write of version 1 again") {
                try b.saveJSONList(name: name, version: 1, body: fromB)
            }
            try await ensureRefused(.stale(version: 1), "a write that skips version 2") {
                try b.saveJSONList(name: name, version: 3, body: fromB)
            }
            try await ensureRefused(.stale(version: 1), "a deletion at version 1") { try b.deleteJSONList(name: name, version: 1) }
            try await ensureRefused(.stale(version: 1), "a state at version 5") { try b.saveAppState(name: name, version: 5, bytes: [1]) }
            try await storeCall { try b.saveJSONList(name: name, version: 2, body: fromB) }
            try await ensureRefused(.stale(version: 2), "a write of version 2 by the store that is behind") {
                try a.saveJSONList(name: name, version: 2, body: fromA)
            }
            let expected = StoredLists(highWater: [name: 2], jsonLists: [name: .init(version: 2, body: fromB)])
            try await ensureLoad(of: a, [name], expected, "after refused and accepted writes of two stores")
        }
    }

    func checkHistory() async throws {
        guard let kept = keptVersions, kept >= 1 else {
            throw violation("the history check needs the store's keptVersions (at least 1)")
        }
        try await withSession { session in
            let names = ContractNames()
            let (name, app, reserved) = (names("history"), names("app"), names("reserved"))
            let a = try await openShared(session)
            let b = try await openShared(session)
            let body = { (version: Int) in jsonBody(["h\(version)"]) }
            let total = kept + 3
            for version in 1 ... total {
                let content = body(version)
                try await storeCall { try a.saveJSONList(name: name, version: version, body: content) }
            }
            func ensureUpdate(after version: Int, _ expected: [StoredUpdate.Step], _ what: String, line: Int = #line) async throws {
                let update = try await storeCall { try b.update(of: name, after: version) }
                try ensureEqual(update, expected.isEmpty ? nil : StoredUpdate(steps: expected), "update(of:after: \(version)) \(what)", line: line)
            }
            let latest = StoredUpdate.Step(version: total, content: .json(body(total)))
            let keptSteps = ((total - kept + 1) ... total).map { StoredUpdate.Step(version: $0, content: .json(body($0))) }
            try await ensureUpdate(after: total - kept, keptSteps, "with \(total) versions written, \(kept) kept: every kept one, in order")
            try await ensureUpdate(after: total - kept - 1, [latest], "past the kept versions: only the latest")
            try await ensureUpdate(after: 0, [latest], "from the start: only the latest")
            try await ensureUpdate(after: total - 1, [latest], "one version behind")
            try await ensureUpdate(after: total, [], "at the latest version")
            try await ensureUpdate(after: total + 5, [], "beyond the latest version")
            // A deletion and a re-creation are kept as versions too.
            let recreated = jsonBody(["re"])
            try await storeCall { try a.deleteJSONList(name: name, version: total + 1) }
            try await storeCall { try a.saveJSONList(name: name, version: total + 2, body: recreated) }
            try await ensureUpdate(
                after: total, [.init(version: total + 1, content: .deleted), .init(version: total + 2, content: .json(recreated))],
                "after a deletion and a re-creation")
            if let largest = largestKeptContent {
                // A version too big to keep: the latest has it, but a span over it gives only the latest.
                let big = [UInt8](repeating: 0x61, count: largest + 1)
                let small = jsonBody(["small"])
                try await storeCall { try a.saveJSONList(name: name, version: total + 3, body: big) }
                try await ensureUpdate(after: total + 2, [.init(version: total + 3, content: .json(big))], "when the latest is too big to keep")
                try await storeCall { try a.saveJSONList(name: name, version: total + 4, body: small) }
                let after = StoredUpdate.Step(version: total + 4, content: .json(small))
                try await ensureUpdate(after: total + 2, [after], "over a version too big to keep: only the latest")
                try await ensureUpdate(after: total + 3, [after], "after the version too big to keep")
            }
            // A Swift app's states are kept as its versions; a reservation is only a version.
            let states: [[UInt8]] = [[0, 1], [2, 255]]
            for (index, state) in states.enumerated() {
                try await storeCall { try a.saveAppState(name: app, version: index + 1, bytes: state) }
            }
            try ensureEqual(
                try await storeCall { try b.update(of: app, after: 0) },
                Optional(StoredUpdate(steps: [.init(version: 1, content: .state(states[0])), .init(version: 2, content: .state(states[1]))])),
                "update(of:after: 0) of an app state saved at 1 and 2")
            try await storeCall { try a.saveHighWater(3, for: reserved) }
            try ensureEqual(
                try await storeCall { try b.update(of: reserved, after: 0) }, Optional(StoredUpdate(steps: [.init(version: 3, content: .reserved)])),
                "update(of:after: 0) of versions reserved up to 3")
            try ensureEqual(try await storeCall { try b.update(of: reserved, after: 3) }, nil, "update(of:after: 3) of versions reserved up to 3")
        }
    }

    func checkVersions() async throws {
        try await withSession { session in
            let names = ContractNames()
            let (list, gone, app, refused) = (names("list"), names("gone"), names("app"), names("refused"))
            let a = try await openShared(session)
            let b = try await openShared(session)
            try await storeCall { try a.saveJSONList(name: list, version: 1, body: jsonBody(["1"])) }
            try await storeCall { try a.saveJSONList(name: list, version: 2, body: jsonBody(["2"])) }
            try await storeCall { try a.saveJSONList(name: gone, version: 1, body: jsonBody(["1"])) }
            try await storeCall { try a.deleteJSONList(name: gone, version: 2) }
            try await storeCall { try a.saveAppState(name: app, version: 1, bytes: [7]) }
            _ = await storeAttempt { try a.saveJSONList(name: refused, version: 4, body: jsonBody([])) }
            let seen = try await storeCall { try b.versions() }.filter { $0.key.hasPrefix(names.prefix) }
            try ensureEqual(seen, [list: 2, gone: 2, app: 1], "versions() of another store")
            let some = try await storeCall { try b.versions(of: [list, app, refused, names("never")]) }
            try ensureEqual(some, [list: 2, app: 1], "versions(of:) of two stored lists, a refused one and a name never written")
            try await storeCall { try b.saveJSONList(name: list, version: 3, body: jsonBody(["3"])) }
            let again = try await storeCall { try a.versions() }
            try ensureEqual(again[list], 3, "versions() after another store wrote version 3")
        }
    }

    func checkNotices() async throws {
        try await withSession { session in
            let names = ContractNames()
            let (name, other, refused) = (names("noticed"), names("other"), names("refused"))
            let a = try await openShared(session)
            let b = try await openShared(session)
            let recorder = NoticeRecorder(b)
            defer { recorder.stop() }
            let listening = await becomesTrue(within: .seconds(5)) { recorder.notices.contains(.reconnected) }
            try ensure(listening, "notices() did not start with .reconnected within 5 s (got \(recorder.notices))")
            _ = await storeAttempt { try a.saveJSONList(name: refused, version: 2, body: jsonBody([])) }
            for version in 1 ... 3 {
                try await storeCall { try a.saveJSONList(name: name, version: version, body: jsonBody(["\(version)"])) }
            }
            try await storeCall { try a.saveAppState(name: other, version: 1, bytes: [1]) }
            let arrived = await becomesTrue(within: .seconds(5)) {
                let notices = recorder.notices
                return notices.contains(.changed(name: name, version: 3)) && notices.contains(.changed(name: other, version: 1))
            }
            let notices = recorder.notices
            try ensure(arrived, "another store's writes (\(name) up to 3, \(other) at 1) were not noticed within 5 s: \(notices)")
            let versions = notices.compactMap { notice -> Int? in
                guard case let .changed(changed, version) = notice, changed == name else { return nil }
                return version
            }
            try ensure(versions == versions.sorted() && Set(versions).count == versions.count && versions.allSatisfy { (1 ... 3).contains($0) },
                       "notices of \(name) are \(versions), not increasing versions of 1...3")
            try ensure(!notices.contains { if case let .changed(changed, _) = $0 { changed == refused } else { false } },
                       "a refused write was noticed: \(notices)")
        }
    }

    func checkIdempotency() async throws {
        try await withSession { session in
            let name = ContractNames()("keyed")
            let a = try await openShared(session)
            let b = try await openShared(session)
            let put = IdempotentWrite(key: IdempotencyKey(key: "put-1", fingerprint: Array(repeating: 1, count: 32)), version: 1, created: true)
            try await storeCall { try a.saveJSONList(name: name, version: 1, body: jsonBody(["1"]), idempotency: put) }
            let found = try await storeCall { try b.idempotentWrite(of: name, key: "put-1") }
            try ensureEqual(found, Optional(put), "the key another store kept")
            try await ensureRefused(.idempotencyKeyUsed, "a second write with the key") {
                try b.saveJSONList(name: name, version: 2, body: jsonBody(["2"]), idempotency: put)
            }
            let versions = try await storeCall { try a.versions() }
            try ensureEqual(versions[name], 1, "the list's version after the refused write")
            let none = try await storeCall { try a.idempotentWrite(of: name, key: "never-used") }
            try ensureEqual(none, IdempotentWrite?.none, "a key no write kept")
            let drop = IdempotentWrite(key: IdempotencyKey(key: "drop-1", fingerprint: Array(repeating: 2, count: 32)), version: 2, created: false)
            try await storeCall { try b.deleteJSONList(name: name, version: 2, idempotency: drop) }
            let dropped = try await storeCall { try a.idempotentWrite(of: name, key: "drop-1") }
            try ensureEqual(dropped, Optional(drop), "a deletion's key")
        }
    }

    func checkRevocations() async throws {
        try await withSession { session in
            let a = try await openShared(session)
            let b = try await openShared(session)
            let start = try await storeCall { try b.revocations(after: nil) }
            try ensureEqual(start.revocations, [], "revocations(after: nil) of a fresh store")
            let recorded: [Revocation] = [.identity("alice"), .list("team"), .session("0123abcd"), .everything, .identity("bob")]
            for revocation in recorded {
                try await storeCall { try a.recordRevocation(revocation) }
            }
            try await storeCall { try b.recordRevocation(.identity("b's own")) }
            let read = try await storeCall { try b.revocations(after: start.position) }
            try ensureEqual(read.revocations, recorded, "what another store reads after the position it started from")
            try ensure(!read.isIncomplete, "a read after a kept position says revocations were dropped")
            let again = try await storeCall { try b.revocations(after: read.position) }
            try ensureEqual(again.revocations, [], "a second read after the last position")
            try ensureEqual(again.position, read.position, "the position after nothing new")
            let own = try await storeCall { try a.revocations(after: start.position) }
            try ensureEqual(own.revocations, [.identity("b's own")], "what the recording store reads back (its own are left out)")
            let latest = try await storeCall { try a.revocations(after: nil) }
            try ensureEqual(latest.position, own.position, "revocations(after: nil) starts after the latest")
        }
    }

    /// `count` stores opened at once on fresh storage (the first stores of the database make its schema).
    public func checkConcurrentOpening(stores count: Int) async throws {
        try await withSession { session in
            let names = ContractNames()
            let stores = try await withThrowingTaskGroup(of: (any ListStore).self) { group in
                for _ in 0 ..< count {
                    group.addTask { try await session.open() }
                }
                var opened: [any ListStore] = []
                for try await store in group {
                    opened.append(store)
                }
                return opened
            }
            try ensure(stores.count == count && stores.allSatisfy { $0.isShared }, "\(stores.count) of \(count) stores opened, or not shared")
            let common = names("common")
            let outcomes = await withTaskGroup(of: (Int, StoreError?).self) { group in
                for (index, store) in stores.enumerated() {
                    let own = names("own\(index)")
                    group.addTask {
                        if let error = await storeAttempt({ try store.saveJSONList(name: own, version: 1, body: jsonBody(["\(index)"])) }) {
                            return (index, error)
                        }
                        return (index, await storeAttempt { try store.saveJSONList(name: common, version: 1, body: jsonBody(["\(index)"])) })
                    }
                }
                var outcomes: [(index: Int, error: StoreError?)] = []
                for await (index, error) in group {
                    outcomes.append((index, error))
                }
                return outcomes
            }
            let winners = outcomes.filter { $0.error == nil }.map { $0.index }
            let losers = outcomes.compactMap { $0.error }
            try ensure(winners.count == 1, "\(winners.count) stores won the race to write version 1 of one list: \(outcomes)")
            try ensure(losers.allSatisfy { $0.kind == .stale(version: 1) }, "the race's losers were not refused as stale at 1: \(losers)")
            let winner = try await storeCall { try stores[0].load() }.jsonLists[common]
            let expected = StoredLists.JSONList(version: 1, body: jsonBody(["\(winners.first ?? -1)"]))
            try ensureEqual(winner, expected, "load() of the raced list")
            let versions = try await storeCall { try stores[count - 1].versions() }
            for index in 0 ..< count {
                try ensureEqual(versions[names("own\(index)")], 1, "versions() of store \(index)'s own list")
            }
            let secrets = try await withThrowingTaskGroup(of: [UInt8].self) { group in
                for store in stores {
                    group.addTask { try await storeCall { try store.secret() } }
                }
                var secrets: Set<[UInt8]> = []
                for try await secret in group {
                    secrets.insert(secret)
                }
                return secrets
            }
            try ensure(secrets.count == 1, "stores opened at once asked for the secret at once and got \(secrets.count) different ones")
        }
    }

    func checkLeases() async throws {
        try await withSession { session in
            let lease = ContractNames()("lease")
            let a = try await openShared(session)
            let b = try await openShared(session)
            let taken = await becomesTrue(within: .seconds(10)) { a.holdsLease(lease) }
            try ensure(taken, "a lease nobody holds was not taken within 10 s")
            _ = b.holdsLease(lease)
            try await Task.sleep(for: .milliseconds(2_500))
            try ensure(!b.holdsLease(lease), "two stores hold one lease at once")
            try ensure(a.holdsLease(lease), "the holder lost its lease")
            await session.close(a)
            let passed = await becomesTrue(within: .seconds(10)) { b.holdsLease(lease) }
            try ensure(passed, "the lease did not pass on within 10 s of its holder closing")
        }
    }
}

/// Collects a store's notices as they come, for checks that wait (bounded) for some.
final class NoticeRecorder: Sendable {
    private struct State {
        var notices: [StoreNotice] = []
        var ended = false
    }

    private let state = Mutex(State())
    private let consumer = Mutex<Task<Void, Never>?>(nil)

    init(_ store: any ListStore) {
        let stream = store.notices()
        let task = Task { [self] in
            for await notice in stream {
                state.withLock { $0.notices.append(notice) }
            }
            state.withLock { $0.ended = true }
        }
        consumer.withLock { $0 = task }
    }

    /// The notices so far, in order.
    var notices: [StoreNotice] { state.withLock { $0.notices } }
    /// Whether the stream ended.
    var hasEnded: Bool { state.withLock { $0.ended } }

    /// Stops listening (which may end the store's notices for good).
    func stop() {
        consumer.withLock { $0 }?.cancel()
    }
}
