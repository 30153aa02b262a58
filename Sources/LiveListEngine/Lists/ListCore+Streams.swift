import LiveListHTML

extension ListCore {
    /// Adds a stream. With `since`, the stream first gets what it missed (one changeset, or a reset);
    /// without, it starts live at the current version.
    ///
    /// - Returns: false when this list was retired (subscribe on the registry's new one).
    func subscribe(_ sink: any EventSink, since: Int?, multiplexed: MultiplexedStream?, viewer: Viewer) -> Bool {
        guard !isRetired else { return false }
        guard !sink.isClosed else { return true }
        let current = renderer.updater.version
        guard exists else {
            // No such list (not yet, or no longer): an empty reset at its version. A multiplexed stream
            // waits for it; a single-list stream ends (its list was deleted after it was found).
            let empty = ListChangeset(list: name.rawValue, from: since ?? 0, version: current, animate: false,
                                      operations: [.reset(html: "", sections: [])])
            let encoded = EncodedChangeset(empty)
            if let multiplexed {
                multiplexed.send(encoded, of: name.rawValue)
            } else {
                sink.send(encoded.event(id: String(current)))
            }
            if multiplexed != nil {
                let subscription = Subscription(sink: sink, multiplexed: multiplexed, delivered: current, viewer: viewer)
                subscriptions[subscription.id] = subscription
            } else {
                sink.close()
            }
            return true
        }
        let subscription = Subscription(sink: sink, multiplexed: multiplexed, delivered: since ?? current, viewer: viewer)
        subscriptions[subscription.id] = subscription
        perViewer?.add(subscription, list: name, configuration: configuration)
        if let since, since != current {
            send(encodedChanges(since: since, for: viewer), to: subscription)
        } else if let multiplexed {
            // Live from now: the stream's version vector starts at the current version.
            multiplexed.advance(name.rawValue, to: current)
        }
        return true
    }

    /// Forgets a stream, with its own renderer for a per-viewer list.
    func drop(_ id: ObjectIdentifier) {
        subscriptions.removeValue(forKey: id)
        perViewer?.remove(id)
    }

    /// Adopts streams that waited on the name before this list took it: each catches up from the
    /// version it was last sent.
    func adopt(_ moved: [Subscription]) {
        for subscription in moved where !subscription.sink.isClosed {
            _ = subscribe(subscription.sink, since: subscription.delivered, multiplexed: subscription.multiplexed, viewer: subscription.viewer)
        }
    }

    /// Retires a list that does not exist and that no stream waits on, so the registry can forget it;
    /// nil when it is in use. Its version goes back to the registry.
    func retireIfUnused() -> Int? {
        guard !isRetired, !exists, subscriptions.isEmpty else { return nil }
        isRetired = true
        return renderer.updater.version
    }

    /// ``changes(since:for:)`` encoded for streams, once per version for a list shown alike to every
    /// viewer: streams that resume from the same version share one catch-up, and every stream that
    /// needs a reset shares its tail (only the head, which says where it starts, is each one's own).
    /// A list rendered per viewer encodes each viewer's own, never shared.
    func encodedChanges(since version: Int, for viewer: Viewer) -> EncodedChangeset {
        guard perViewer == nil else {
            return EncodedChangeset(changes(since: version, for: viewer))
        }
        let current = renderer.updater.version
        if catchUps.version != current {
            catchUps = CatchUpCache(version: current)
        }
        let key: Int
        switch log.lookup(since: version, current: current) {
        case .current:
            return EncodedChangeset(changes(since: version, for: viewer))
        case .changesets:
            key = version
        case .reset:
            key = CatchUpCache.reset
        }
        if let (tail, isReset) = catchUps.entries[key] {
            let head = ListChangeset.encodedJSONHead(list: name.rawValue, from: version)
            return EncodedChangeset(head: head, tail: tail, version: current, isReset: isReset)
        }
        let encoded = EncodedChangeset(changes(since: version, for: viewer))
        catchUps.keep(encoded.tail, isReset: encoded.isReset, for: key)
        return encoded
    }
}

/// The catch-ups of one list to one version (its current one), by the version they start from (a
/// reset by ``reset``: its tail is the same from any start). At most ``capacity`` are kept; others
/// are encoded for their stream alone, and count for it in the server's stream budget.
struct CatchUpCache {
    static let reset = Int.min
    static let capacity = 16
    /// The version every entry goes to.
    var version = -1
    /// Each catch-up's shared tail, and whether it is a reset (a windowed list's long diff is one).
    private(set) var entries: [Int: (tail: EventTail, isReset: Bool)] = [:]

    var isEmpty: Bool { entries.isEmpty }

    mutating func keep(_ tail: EventTail, isReset: Bool, for key: Int) {
        guard entries.count < Self.capacity else { return }
        entries[key] = (tail, isReset)
    }
}
