import LiveListHTML

/// The registry's streams, and what it follows of the other processes of a shared store.
extension ListRegistry {
    // MARK: - Other processes

    /// Whether other processes write to the store too (several nodes on one database).
    public nonisolated var isStoreShared: Bool { shared != nil }

    /// The store's state, for `/healthz` and `/readyz`.
    public nonisolated var storeHealth: StoreHealth { store.health }

    /// Whether this process holds the store's lease `name` now (always, with a store of one process):
    /// timers that must run on one node at a time, such as the demo lists', tick only while it does.
    public nonisolated func holdsLease(_ name: String) -> Bool {
        shared?.holdsLease(name) ?? true
    }

    /// Follows a shared store's notices until they end: each list that another process wrote catches up
    /// in its ordered path (its streams get the same diffs as that process's), and after a reconnection
    /// every list does. Returns at once with a store of one process. `log` gets failures to follow.
    ///
    /// A notice is a hint, never a work order (any database role can send one), so a flood of them
    /// costs bounded work. A notice for a list this process holds is followed at once, unless that
    /// list's last notice named a version the store did not hold (in the last second). Those, and
    /// notices for names this process holds no list of, are checked together: one query for the
    /// stored versions of all of them, at most every ``StoreFollowing/checkInterval``, and only what
    /// the store holds is followed. A catch-up of every list runs at most once a second.
    public func followStore(log: @escaping @Sendable (String) -> Void = { _ in }) async {
        guard let shared else { return }
        following.log = log
        for await notice in shared.notices() {
            switch notice {
            case let .changed(name, version):
                await noticed(name, version: version, log: log)
            case .reconnected:
                await catchUpEverythingPaced(log: log)
            }
        }
        following.pendingCheck?.cancel()
    }

    /// The list named `name`, if it exists. With a shared store, a name this process holds no list of
    /// may be a list another process created a moment ago (its notice not yet checked): the name joins
    /// the next check of unchecked names (one query for all of them, at most every
    /// ``StoreFollowing/checkInterval``), and the answer waits for it. A request for a list that exists
    /// is never told it does not because it came to the wrong node first; requests for names nobody
    /// created cost no more than notices do. A list this process holds is found without awaiting the
    /// registry, as ``existingList(_:)`` does.
    package nonisolated func storedList(_ name: ListName) async -> (any ServedList)? {
        if let hosted = existingList(name) { return hosted }
        guard shared != nil else { return nil }
        return await lookUpInStore(name)
    }

    /// The miss of ``storedList(_:)`` with a shared store: `name` waits for the next check.
    private func lookUpInStore(_ name: ListName) async -> (any ServedList)? {
        following.note(name)
        scheduleCheck(log: following.log)
        await following.pendingCheck?.value
        return existingList(name)
    }

    /// Another process wrote `name` at `version`, or says so.
    private func noticed(_ name: String, version: Int, log: @escaping @Sendable (String) -> Void) async {
        guard let listName = ListName(name) else { return }
        guard let hosted = known(listName), !following.distrusts(listName) else {
            following.note(listName)
            scheduleCheck(log: log)
            return
        }
        await follow(hosted, to: version, log: log)
        if hosted.currentVersion < version {
            // The store does not hold what the notice named: its next notices are checked together.
            following.distrust(listName)
        }
    }

    /// Catches `hosted` up with the store, up to `version`.
    private func follow(_ hosted: any ServedList, to version: Int, log: @Sendable (String) -> Void) async {
        do {
            try await hosted.catchUpWithStore(noticed: version)
        } catch {
            log("cannot follow \(hosted.name) to version \(version): \(error.cause ?? error.detail)")
        }
        await retireIfUnused(hosted)
    }

    /// Catches every list up now, or, when that ran less than a second ago, a second after it did.
    private func catchUpEverythingPaced(log: @escaping @Sendable (String) -> Void) async {
        if let last = following.lastCatchUp, ContinuousClock.now - last < .seconds(1) {
            try? await Task.sleep(until: last + .seconds(1))
        }
        await catchUpEverything(log: log)
    }

    /// Checks the unchecked names soon, unless a check is already waiting.
    private func scheduleCheck(log: @escaping @Sendable (String) -> Void) {
        guard following.pendingCheck == nil else { return }
        following.pendingCheck = Task {
            await self.checkUnchecked(log: log)
        }
    }

    /// One query for the stored versions of the unchecked names (every list's catch-up, when there are
    /// more than ``StoreFollowing/largestCheck``), then each list the store holds beyond this process
    /// follows it.
    private func checkUnchecked(log: @escaping @Sendable (String) -> Void) async {
        if let last = following.lastCheck, ContinuousClock.now - last < StoreFollowing.checkInterval {
            try? await Task.sleep(until: last + StoreFollowing.checkInterval)
        }
        following.lastCheck = .now
        let (names, overflowed) = following.takeUnchecked()
        following.pendingCheck = nil
        if overflowed {
            await catchUpEverythingPaced(log: log)
            return
        }
        let stored: [String: Int]
        do {
            guard let shared else { return }
            stored = try shared.versions(of: names.map(\.rawValue))
        } catch {
            log("cannot read the stored versions of \(names.count) lists: \(error)")
            return
        }
        for (name, version) in stored.sorted(by: { $0.key < $1.key }) {
            guard let listName = ListName(name), version > (known(listName)?.currentVersion ?? 0) else { continue }
            await follow(actor(for: listName), to: version, log: log)
        }
    }

    /// Every list catches up with the store (after notices may have been missed, and before a
    /// revocation of another process is applied, so that its rules see what that process wrote first).
    package func catchUpEverything(log: @Sendable (String) -> Void) async {
        following.lastCatchUp = .now
        let versions: [String: Int]
        do {
            guard let shared else { return }
            versions = try shared.versions()
        } catch {
            log("cannot read the stored versions: \(error)")
            return
        }
        following.forgetDistrust()
        for (name, version) in versions.sorted(by: { $0.key < $1.key }) {
            guard let listName = ListName(name) else { continue }
            await follow(actor(for: listName), to: version, log: log)
        }
    }

    /// Keeps `revocation` for the other processes of a shared store (see ``ListStore/recordRevocation(_:)``).
    /// Blocks while the store writes: call it off the cooperative pool.
    package nonisolated func recordRevocation(_ revocation: Revocation) throws(StoreError) {
        try store.recordRevocation(revocation)
    }

    /// The revocations of other processes after `position` (see ``SharedListStore/revocations(after:)``).
    /// Blocks while the store reads: call it off the cooperative pool.
    package nonisolated func revocations(after position: Int?) throws(StoreError) -> RevocationBatch {
        guard let shared else { return RevocationBatch(revocations: [], position: position ?? 0) }
        return try shared.revocations(after: position)
    }

    // MARK: - Streams

    /// Adds a multiplexed stream to every list it names. A list that does not exist gets an empty
    /// reset at its high-water mark, and the stream joins it when it is created.
    ///
    /// With a shared store, the lists whose `since` is ahead of this process are looked up in one query
    /// (``ListStore/versions(of:)``): only a list whose stored version reaches what the viewer saw is
    /// caught up with the store, so that a request naming many lists, with made-up versions, costs one
    /// round trip to the database, not one per list.
    package func subscribe(_ stream: MultiplexedStream, names: [ListName], since: [String: Int], viewer: Viewer = .anonymous) async {
        let stored = storedVersions(ofListsAheadIn: names, since: since)
        for name in names {
            while true {
                if known(name) == nil, shared == nil || actorCount + waiting.count >= limits.maximumNames {
                    // No such list: its empty reset at the name's version. The stream waits for it in
                    // `waiting` (a shared store's lists may exist on other nodes: those get an actor,
                    // which asks the store), unless the registry holds its limit of names.
                    let version = highWater[name.rawValue] ?? 0
                    Self.sendEmptyReset(to: stream, of: name, at: version, since: since)
                    // A stream that ended meanwhile is not added: its `forget` may have run already.
                    if shared == nil, !stream.sink.isClosed, waiting[name] != nil || actorCount + waiting.count < limits.maximumNames {
                        let subscription = Subscription(sink: stream.sink, multiplexed: stream, delivered: version, viewer: viewer)
                        waiting[name, default: [:]][subscription.id] = subscription
                    }
                    break
                }
                let hosted = actor(for: name)
                let following = (stored[name.rawValue] ?? 0) >= (since[name.rawValue] ?? .max)
                _ = await hosted.prepare(for: viewer)
                if await hosted.subscribe(stream.sink, since: since[name.rawValue], multiplexed: stream, viewer: viewer, followingStore: following) {
                    break
                }
                forget(hosted, version: await hosted.version)
            }
        }
    }

    /// The stored versions of the lists among `names` whose `since` is ahead of this process, in one
    /// query; empty with a store of one process, or when the store fails (those lists then wait for
    /// the store's notices).
    private func storedVersions(ofListsAheadIn names: [ListName], since: [String: Int]) -> [String: Int] {
        guard let shared else { return [:] }
        let ahead = names.filter { name in
            guard let seen = since[name.rawValue] else { return false }
            return seen > (known(name)?.currentVersion ?? highWater[name.rawValue] ?? 0)
        }
        guard !ahead.isEmpty else { return [:] }
        return (try? shared.versions(of: ahead.map(\.rawValue))) ?? [:]
    }

    /// Sends a multiplexed stream, for each of `names`, the empty reset of a list that has never
    /// existed, without subscribing it: what a name its viewer may not see gets.
    nonisolated package func refuse(_ stream: MultiplexedStream, names: [ListName], since: [String: Int]) {
        for name in names {
            Self.sendEmptyReset(to: stream, of: name, at: 0, since: since)
        }
    }

    /// Sends a multiplexed stream the empty reset of `name` at `version`: what a name without a list
    /// gets.
    private static func sendEmptyReset(to stream: MultiplexedStream, of name: ListName, at version: Int, since: [String: Int]) {
        let empty = ListChangeset(list: name.rawValue, from: since[name.rawValue] ?? 0, version: version, animate: false,
                                  operations: [.reset(html: "", sections: [])])
        stream.send(EncodedChangeset(empty), of: name.rawValue)
    }

    /// Removes an ended multiplexed stream from its lists, and forgets the names it alone waited on.
    package func forget(_ stream: MultiplexedStream) async {
        await leave(stream, names: stream.names.compactMap(ListName.init))
    }

    /// Removes a multiplexed stream from `names` (lists that left it, or all of an ended stream's),
    /// and forgets the names it alone waited on.
    package func leave(_ stream: MultiplexedStream, names: [ListName]) async {
        let id = ObjectIdentifier(stream.sink)
        for name in names {
            if waiting[name]?.removeValue(forKey: id) != nil {
                if waiting[name]?.isEmpty == true { waiting.removeValue(forKey: name) }
                continue
            }
            guard let hosted = known(name) else { continue }
            await hosted.unsubscribe(stream.sink)
            await retireIfUnused(hosted)
        }
    }
}

/// What a registry makes of a shared store's notices: when it last caught every list up and last
/// checked notices together, the names waiting for that check, and the lists whose notices are
/// checked rather than followed for a while.
struct StoreFollowing {
    /// The shortest time between two checks of notices together: at most 20 such queries a second.
    static let checkInterval = Duration.milliseconds(50)
    /// The most names one check looks up; more make a catch-up of every list instead.
    static let largestCheck = 256

    var lastCatchUp: ContinuousClock.Instant?
    /// Where failures to follow are told (given to ``ListRegistry/followStore(log:)``).
    var log: @Sendable (String) -> Void = { _ in }
    var lastCheck: ContinuousClock.Instant?
    var pendingCheck: Task<Void, Never>?
    /// Names noticed but not yet checked, at most ``largestCheck``; past that, only that there were more.
    private var unchecked: Set<ListName> = []
    private var overflowed = false

    /// Notes that `name` needs a check.
    mutating func note(_ name: ListName) {
        if unchecked.count < Self.largestCheck || unchecked.contains(name) {
            unchecked.insert(name)
        } else {
            overflowed = true
        }
    }

    /// The names to check, and whether there were more than ``largestCheck``; none are left after.
    mutating func takeUnchecked() -> (names: Set<ListName>, overflowed: Bool) {
        defer { (unchecked, overflowed) = ([], false) }
        return (unchecked, overflowed)
    }
    /// Lists whose last notice named a version the store did not hold, and until when.
    private var distrusted: [ListName: ContinuousClock.Instant] = [:]

    func distrusts(_ name: ListName) -> Bool {
        distrusted[name].map { ContinuousClock.now < $0 } ?? false
    }

    mutating func distrust(_ name: ListName) {
        distrusted[name] = .now + .seconds(1)
    }

    /// A catch-up of every list covers what was distrusted.
    mutating func forgetDistrust() {
        distrusted.removeAll()
    }
}
