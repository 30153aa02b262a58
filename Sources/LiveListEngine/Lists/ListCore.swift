import Foundation
import LiveListHTML
import Synchronization

/// What readers see of a list without awaiting its actor: whether it exists and its version. Both
/// are set before a write is acknowledged (with its publication, or the renderer's reset), so a
/// reader that sees them sees that write.
package final class ListVisibility: Sendable {
    private let existence = Atomic<Bool>(false)
    private let visibleVersion: Atomic<Int>

    init(version: Int) {
        visibleVersion = Atomic(version)
    }

    var exists: Bool {
        existence.load(ordering: .acquiring)
    }

    func setExists(_ value: Bool) {
        existence.store(value, ordering: .releasing)
    }

    var version: Int {
        visibleVersion.load(ordering: .acquiring)
    }

    func setVersion(_ value: Int) {
        visibleVersion.store(value, ordering: .releasing)
    }
}

/// What every kind of list shares, owned by the kind's actor and used only on it: the renderer whose
/// rendering every viewer shares (a render that does not depend on the viewer is done once per
/// version, and its encoded bytes go to every viewer), the version, the bounded log of changesets, the
/// streams and the fan-out to them, the readers' caches and the browser events' handler.
///
/// A kind's write runs its own checks and store write, then takes its version and publishes through
/// here (``nextVersion()``, ``publish(_:)``): one ordered path for every kind.
package final class ListCore {
    let name: ListName
    let store: any ListStore
    /// The store as a shared one, or nil (a store of one process): asked once, here.
    let shared: (any SharedListStore)?
    let visibility: ListVisibility
    /// The list's settings (a served renderer's adapter and options follow its renders).
    var configuration: ListConfiguration
    var renderer: Renderer<PatchUpdater>
    var log: ChangeLog
    var subscriptions: [ObjectIdentifier: Subscription] = [:]
    var encodedSnapshot: (version: Int, bytes: [UInt8])?
    /// Catch-ups to the current version encoded once and shared by every stream that needs the same
    /// one (``encodedChanges(since:for:)``); emptied whenever the version moves.
    var catchUps = CatchUpCache()
    /// Where each cell of the current rendering is (section and cell index), by key, at a version.
    var cellPositions: (version: Int, positions: [ByteKey: (section: Int, cell: Int)])?
    /// The range route's sections with every key, encoded once per version, when first asked for
    /// (``ListCore/window(from:count:since:keys:for:)``).
    var encodedWindowKeys: (version: Int, bytes: [UInt8])?
    /// What a snapshot returns as `state`: a JSON list's PUT body, nil for other kinds.
    var snapshotState: [UInt8]?
    /// Set once the registry dropped this list (an unused placeholder of a JSON list); every later
    /// write and stream goes to a new one for the name.
    var isRetired = false
    var counters = ListCounters()
    var actionHandler: (@Sendable (ListAction) async throws -> Void)?
    /// The action types of the app, when it declared them (``AppHostedList/onAction(accepting:_:)``).
    var actionTypes: (@Sendable (String) -> Bool)?
    /// For a list rendered per viewer: each stream's own renderer (or its group's, for a list whose
    /// viewers are grouped). The list's kind then sends each stream its own changesets, and readers get
    /// their own rendering.
    let perViewer: (any ViewerRenderings)?
    /// The list's actor, which a slow stream's drain comes back to.
    weak var owner: (any ServedList)?
    /// The newest changeset published, encoded once, with the version it goes from: what a stream at that
    /// version gets (``ListCore+FanOut``).
    var latest: (from: Int, encoded: EncodedChangeset, single: ListEvent)?
    /// The fan-out pass in progress, when an audience larger than one slice is being written to.
    var fanOut: FanOutPass?

    init(name: ListName, version: Int, configuration: ListConfiguration, store: any ListStore,
         perViewer: (any ViewerRenderings)? = nil, waiting: [Subscription] = []) {
        self.name = name
        self.store = store
        shared = store.asShared
        self.configuration = configuration
        self.perViewer = perViewer
        visibility = ListVisibility(version: version)
        renderer = Self.makeRenderer(name: name, version: version, configuration: configuration)
        log = ChangeLog(maximumCount: configuration.logCount, maximumBytes: configuration.logBytes)
        // Streams that waited on the name before it had a list wait here now.
        for subscription in waiting {
            subscriptions[subscription.id] = subscription
        }
    }

    private static func makeRenderer(name: ListName, version: Int, configuration: ListConfiguration) -> Renderer<PatchUpdater> {
        Renderer(
            adapter: configuration.adapter,
            updater: PatchUpdater(list: name.rawValue, version: version, options: configuration.options)
        )
    }

    /// Sets the handler of browser events, with the action types it accepts (nil: any).
    func setActions(_ handler: @escaping @Sendable (ListAction) async throws -> Void, accepting types: (@Sendable (String) -> Bool)?) {
        actionHandler = handler
        actionTypes = types
    }

    /// The current version.
    var version: Int {
        renderer.updater.version
    }

    var exists: Bool {
        visibility.exists
    }

    func setExists(_ value: Bool) {
        visibility.setExists(value)
    }

    /// Puts the renderer at exactly `version`, showing `sections`: a stored list loaded, a write that
    /// could not be stored undone, a deleted list emptied.
    func resetRenderer(to sections: [Section], at version: Int) throws {
        renderer = Self.makeRenderer(name: name, version: version - 1, configuration: configuration)
        // Rendering from nothing takes one version; an empty list renders like no list, so step by hand.
        if try renderer.render(sections) == nil {
            _ = renderer.updater.advanceVersion()
        }
        encodedSnapshot = nil
        noteVersion()
    }

    /// Makes the renderer's version the one readers see without awaiting.
    func noteVersion() {
        visibility.setVersion(renderer.updater.version)
        if !catchUps.isEmpty { catchUps = CatchUpCache() }
    }

    /// Moves the version on to `version` without a change of content (another process of a shared
    /// store wrote a list of another kind under this name).
    func skipVersion(to version: Int) {
        renderer.updater.skipVersion(to: version)
        noteVersion()
    }

    /// The next version, or `version_exhausted` past ``ListVersion/maximum``.
    func nextVersion() throws(ListWriteError) -> Int {
        let current = renderer.updater.version
        guard current < ListVersion.maximum else {
            throw ListWriteError(.conflict, code: "version_exhausted",
                                 detail: "\(name) is at version \(current), the largest a client can hold exactly; it takes no more writes")
        }
        return current + 1
    }

    /// Reserves versions in the store ahead of use, so that a crash can never lead to reuse: a list
    /// whose content is not stored with its version (``AppList``, ``PerViewerList``) stores the
    /// version it may reach, a block at a time. `reserved` is the version reserved so far.
    func reserveNextVersion(_ reserved: inout Int) throws {
        let next = try nextVersion()
        if next > reserved {
            let reserve = next + min(configuration.versionBlock, ListVersion.maximum - next)
            try store.saveHighWater(reserve, for: name.rawValue)
            reserved = reserve
        }
    }

    /// An app list's first rendering in this process, as a reset. The renderer started empty, so its
    /// diff inserts everything; but the version it starts from is one that an earlier process may have
    /// served with content (the last reserved version, or the stored state's), so a viewer resuming
    /// from there must be told to replace what it shows, not to insert it again.
    func firstRendering(_ changeset: ListChangeset) -> ListChangeset {
        let rendering = renderer.updater.snapshot.rendering
        return ListChangeset(list: name.rawValue, from: changeset.from, version: changeset.version, animate: false,
                             operations: [.reset(html: rendering.html, sections: rendering.sections)])
    }

    /// Writes one event with the right id for the stream (the version, or the multiplexed vector);
    /// its tail is shared with every other stream that gets the same changeset.
    func send(_ encoded: EncodedChangeset, to subscription: Subscription) {
        if let multiplexed = subscription.multiplexed {
            wrote(multiplexed.send(encoded, of: name.rawValue), bytes: encoded.count, version: encoded.version, isReset: encoded.isReset,
                  to: subscription)
        } else {
            write(encoded.event(id: String(encoded.version)), version: encoded.version, isReset: encoded.isReset, to: subscription)
        }
    }

    func write(_ event: ListEvent, version: Int, isReset: Bool, to subscription: Subscription) {
        wrote(subscription.sink.send(event), bytes: event.count, version: version, isReset: isReset, to: subscription)
    }

    /// Counts an event queued on a stream; a stream that took none is dropped when it has ended, and
    /// otherwise (its server had no room for the event now) waits to drain, then catches up.
    private func wrote(_ sent: Bool, bytes: Int, version: Int, isReset: Bool, to subscription: Subscription) {
        if sent {
            subscription.delivered = version
            counters.eventsSent += 1
            counters.bytesSent += bytes
            if isReset {
                counters.resetsSent += 1
            }
        } else if subscription.sink.isClosed {
            drop(subscription.id)
        } else {
            waitForDrain(subscription)
        }
    }

    /// Stops writing to a slow stream until its socket drains, then sends one changeset for all it
    /// missed: a slow viewer costs one diff, never an unbounded queue.
    func waitForDrain(_ subscription: Subscription) {
        subscription.isWaitingForDrain = true
        counters.coalescedViewers += 1
        subscription.sink.whenDrained { [weak owner, subscription] in
            guard let owner else { return }
            Task { await owner.drained(subscription) }
        }
    }

    /// A slow stream drained: it gets what it missed meanwhile.
    func drained(_ subscription: Subscription) {
        subscription.isWaitingForDrain = false
        guard subscriptions[subscription.id] != nil else { return }
        catchUp(subscription)
    }

    func catchUp(_ subscription: Subscription) {
        let current = renderer.updater.version
        guard subscription.delivered != current else { return }
        if subscription.sink.queuedBytes > configuration.slowViewerBytes {
            waitForDrain(subscription)
            return
        }
        send(encodedChanges(since: subscription.delivered, for: subscription.viewer), to: subscription)
    }
}
