public import LiveListHTML

/// The recent changesets of one list, bounded by count and by encoded bytes, from which a viewer that
/// fell behind is brought up to date with one changeset while the log holds its version, and with a
/// reset beyond it (docs/PROTOCOL.md, "Catching up").
///
/// The operations of consecutive changesets, concatenated, are a valid changeset (each anchor refers to
/// the state left by the operations before it), but they repeat work: a cell inserted then deleted, a
/// cell reloaded ten times. So the log also keeps the list's state at its oldest version (its *base*, a
/// ``KeyedRendering``), replays the changesets on it to find the viewer's state, and answers the
/// changeset from that state to the current rendering: the fewest operations, each cell moved once,
/// reloaded once and only when its HTML differs from what the viewer has.
/// SPI-public only so that the Benchmarks package (HotPathBenchmarks) can measure it.
@_spi(Benchmarks) public struct ChangeLog {
    struct Entry {
        var changeset: ListChangeset
        var bytes: Int
    }

    /// What a viewer at some version needs.
    /// SPI-public only so that the Benchmarks package (HotPathBenchmarks) can measure it.
    @_spi(Benchmarks) public enum Lookup: Equatable {
        /// The viewer is at the current version.
        case current
        /// These changesets, in order (`first`, then `rest`), take the viewer to the current version.
        case changesets(first: ListChangeset, rest: [ListChangeset])
        /// The version is too old for the log, unknown or in the future: only a reset helps.
        case reset
    }

    /// The list's state at one version of the log, from which any later one can be replayed.
    struct Base {
        /// The version it is the state of; nil for the state a new log assumes (empty) before its first
        /// changeset, which is then that changeset's `from`.
        var version: Int?
        var state: KeyedRendering
    }

    let maximumCount: Int
    let maximumBytes: Int
    private(set) var entries: [Entry] = []
    private(set) var byteCount = 0
    /// The state at a version of the log at or after its first `from`; nil when not known. A new log
    /// assumes an empty start; every catch-up checks the replay against the current rendering, and a
    /// wrong assumption (a list loaded from the store starts non-empty without a changeset) is replaced
    /// by the current state.
    private(set) var base: Base? = Base(version: nil, state: KeyedRendering())
    /// The last catch-up answered (viewers that reconnect together ask for the same one).
    private var lastCatchUp: ListChangeset?
    /// How many catch-ups fell back to the plain join although the base was known: a replay that
    /// did not reach the current rendering (the assumed empty start was wrong).
    private(set) var replayMismatches = 0

    /// An empty log keeping at most `maximumCount` changesets and `maximumBytes` of their encodings.
    /// SPI-public only so that the Benchmarks package (HotPathBenchmarks) can measure it.
    @_spi(Benchmarks) public init(maximumCount: Int, maximumBytes: Int) {
        self.maximumCount = max(1, maximumCount)
        self.maximumBytes = max(1, maximumBytes)
    }

    /// Records a changeset (with the size of its encoding), dropping the oldest past the bounds. A
    /// changeset that does not continue the log (a re-created list) starts it anew, and so does a reset,
    /// which replaces everything before it anyway.
    /// SPI-public only so that the Benchmarks package (HotPathBenchmarks) can measure it.
    @_spi(Benchmarks) public mutating func append(_ changeset: ListChangeset, bytes: Int) {
        lastCatchUp = nil
        if let last = entries.last, last.changeset.version != changeset.from {
            entries.removeAll()
            byteCount = 0
            base = nil
        }
        if changeset.isReset, case let .reset(_, sections) = changeset.operations[0] {
            entries.removeAll()
            byteCount = 0
            base = Base(version: changeset.version, state: KeyedRendering(RenderedList(sections: sections)))
        } else if base?.version == nil, entries.isEmpty {
            base?.version = changeset.from
        }
        entries.append(Entry(changeset: changeset, bytes: bytes))
        byteCount += bytes
        var drop = 0
        while entries.count - drop > maximumCount || (byteCount > maximumBytes && entries.count - drop > 1) {
            byteCount -= entries[drop].bytes
            advanceBase(past: entries[drop].changeset)
            drop += 1
        }
        if drop > 0 {
            entries.removeFirst(drop)
        }
    }

    /// Keeps the base within the log when the changeset it is the state before is dropped.
    private mutating func advanceBase(past changeset: ListChangeset) {
        guard var moved = base, moved.version == changeset.from else { return }
        base = nil  // no copy of the state while it changes
        do {
            try moved.state.apply(changeset)
            moved.version = changeset.version
            base = moved
        } catch {
            base = nil
        }
    }

    /// Starts an empty log at a list's known state (a list loaded from the store, which starts at its
    /// stored version without a changeset), so that its first catch-ups are compacted too.
    mutating func start(at version: Int, rendering: RenderedList) {
        entries.removeAll()
        byteCount = 0
        base = Base(version: version, state: KeyedRendering(rendering))
        lastCatchUp = nil
    }

    /// Forgets everything (the list was deleted).
    mutating func clear() {
        entries.removeAll()
        byteCount = 0
        base = Base(version: nil, state: KeyedRendering())
        lastCatchUp = nil
    }

    /// What a viewer at `version` needs to reach `current`.
    /// SPI-public only so that the Benchmarks package (HotPathBenchmarks) can measure it.
    @_spi(Benchmarks) public func lookup(since version: Int, current: Int) -> Lookup {
        if version == current {
            return .current
        }
        guard version < current, entries.last?.changeset.version == current,
              let start = entries.firstIndex(where: { $0.changeset.from == version }) else {
            return .reset
        }
        return .changesets(first: entries[start].changeset, rest: entries[(start + 1)...].map(\.changeset))
    }

    /// One changeset doing what `changesets` (a lookup's answer: the log from some version to its end)
    /// do, compacted: the changeset from the state at their `from` to `rendering`, the current one.
    /// Falls back to the plain join when the log cannot know that older state (it starts later) or when
    /// the plain join has fewer operations.
    /// SPI-public only so that the Benchmarks package (HotPathBenchmarks) can measure it.
    @_spi(Benchmarks) public mutating func compactedJoin(
        first: ListChangeset, rest: [ListChangeset], to rendering: RenderedList, animatableChangeCount: Int
    ) -> ListChangeset {
        guard let last = rest.last else {
            return first
        }
        let changesets = [first] + rest
        let from = first.from
        let version = last.version
        if let lastCatchUp, lastCatchUp.from == from, lastCatchUp.version == version {
            return lastCatchUp
        }
        let plain = ListChangeset.joining(first: first, rest: rest, animatableChangeCount: animatableChangeCount)
        let target = KeyedRendering(rendering)
        guard let known = base, let baseVersion = known.version else {
            // Learn the current state: later catch-ups from now on are compacted.
            base = Base(version: version, state: target)
            return plain
        }
        guard baseVersion <= from else {
            if first.isReset {
                // A reset starts the log: one reset to the current state does all of it.
                return ListChangeset(
                    list: plain.list, from: from, version: version, animate: false,
                    operations: [.reset(html: rendering.html, sections: rendering.sections)]
                )
            }
            return plain
        }
        // Replay from the base to the viewer's version, then on to the current one.
        var state = known.state
        var start: KeyedRendering?
        do {
            for entry in entries where entry.changeset.from >= baseVersion {
                if entry.changeset.from == from {
                    start = state
                }
                try state.apply(entry.changeset)
            }
        } catch {
            start = nil
        }
        guard let start, state == target else {
            replayMismatches += 1
            base = Base(version: version, state: target)
            return plain
        }

        var operations = start.operations(to: rendering)
        // A section deleted and created again may be cheaper to replace than to empty cell by cell.
        let recreated = Set(changesets.lazy.flatMap(\.operations).compactMap { operation -> String? in
            if case let .deleteSection(section) = operation { return section }
            return nil
        })
        if !recreated.isEmpty {
            let replacing = start.operations(to: rendering, replacing: recreated)
            if replacing.count < operations.count {
                operations = replacing
            }
        }
        guard operations.count <= plain.operations.count else {
            return plain
        }
        let compacted = ListChangeset(
            list: plain.list, from: from, version: version,
            animate: changesets.allSatisfy { $0.animate || $0.operations.isEmpty } && operations.count <= animatableChangeCount,
            operations: operations
        )
        lastCatchUp = compacted
        return compacted
    }
}

extension ListChangeset {
    /// One changeset doing what `first` and then `rest` do in turn (they must be consecutive).
    static func joining(first: ListChangeset, rest: [ListChangeset], animatableChangeCount: Int) -> ListChangeset {
        guard let last = rest.last else {
            return first
        }
        let operations = first.operations + rest.flatMap(\.operations)
        return ListChangeset(
            list: first.list,
            from: first.from,
            version: last.version,
            animate: first.animate && rest.allSatisfy(\.animate) && operations.count <= animatableChangeCount,
            operations: operations
        )
    }
}
