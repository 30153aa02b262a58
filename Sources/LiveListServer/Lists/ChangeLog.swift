import LiveListHTML

/// The recent changesets of one list, bounded by count and by encoded bytes, from which a viewer that
/// fell behind is brought up to date with one changeset (the operations of consecutive changesets,
/// concatenated, are a valid changeset: each anchor refers to the state left by the operations before
/// it) or, beyond the log, with a reset.
struct ChangeLog {
    struct Entry {
        var changeset: ListChangeset
        var bytes: Int
    }

    /// What a viewer at some version needs.
    enum Lookup: Equatable {
        /// The viewer is at the current version.
        case current
        /// These changesets, in order, take the viewer to the current version.
        case changesets([ListChangeset])
        /// The version is too old for the log, unknown or in the future: only a reset helps.
        case reset
    }

    let maximumCount: Int
    let maximumBytes: Int
    private(set) var entries: [Entry] = []
    private(set) var byteCount = 0

    init(maximumCount: Int, maximumBytes: Int) {
        self.maximumCount = max(1, maximumCount)
        self.maximumBytes = max(1, maximumBytes)
    }

    /// Records a changeset (with the size of its encoding), dropping the oldest past the bounds. A
    /// changeset that does not continue the log (a reset, a re-created list) starts it anew.
    mutating func append(_ changeset: ListChangeset, bytes: Int) {
        if let last = entries.last, last.changeset.version != changeset.from {
            entries.removeAll()
            byteCount = 0
        }
        entries.append(Entry(changeset: changeset, bytes: bytes))
        byteCount += bytes
        var drop = 0
        while entries.count - drop > maximumCount || (byteCount > maximumBytes && entries.count - drop > 1) {
            byteCount -= entries[drop].bytes
            drop += 1
        }
        if drop > 0 {
            entries.removeFirst(drop)
        }
    }

    /// Forgets everything (the list was deleted).
    mutating func clear() {
        entries.removeAll()
        byteCount = 0
    }

    /// What a viewer at `version` needs to reach `current`.
    func lookup(since version: Int, current: Int) -> Lookup {
        if version == current {
            return .current
        }
        guard version < current, let start = entries.firstIndex(where: { $0.changeset.from == version }) else {
            return .reset
        }
        let changesets = entries[start...].map(\.changeset)
        // A reset in the range replaces everything before it anyway.
        if let lastReset = changesets.lastIndex(where: \.isReset) {
            return .changesets(Array(changesets[lastReset...]))
        }
        return .changesets(changesets)
    }

    /// The bytes of the entries from `version` on (to weigh a catch-up against a reset).
    func bytes(since version: Int) -> Int {
        guard let start = entries.firstIndex(where: { $0.changeset.from == version }) else {
            return 0
        }
        return entries[start...].reduce(0) { $0 + $1.bytes }
    }
}

extension ListChangeset {
    /// One changeset doing what `changesets` do in turn (they must be consecutive).
    static func joining(_ changesets: [ListChangeset], animatableChangeCount: Int) -> ListChangeset {
        precondition(!changesets.isEmpty)
        guard changesets.count > 1 else {
            return changesets[0]
        }
        let operations = changesets.flatMap(\.operations)
        return ListChangeset(
            list: changesets[0].list,
            from: changesets[0].from,
            version: changesets[changesets.count - 1].version,
            animate: changesets.allSatisfy(\.animate) && operations.count <= animatableChangeCount,
            operations: operations
        )
    }
}
