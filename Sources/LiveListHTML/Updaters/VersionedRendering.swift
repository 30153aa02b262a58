/// What both updaters keep of a list: its name, its version and its current rendering, with the one
/// rule that ties them: a version is created exactly when the state moves on.
struct VersionedRendering: Sendable {
    let list: String
    private(set) var version: Int
    /// The current rendering. Replacing it without `advance(to:)` keeps the version (a re-render that
    /// changed nothing the browser sees).
    var rendering = RenderedList()

    init(list: String, version: Int) {
        self.list = list
        self.version = version
    }

    var snapshot: ListSnapshot {
        ListSnapshot(list: list, version: version, rendering: rendering)
    }

    /// Takes `newRendering` as a new version; returns the version it came from.
    mutating func advance(to newRendering: RenderedList) -> Int {
        let from = version
        version += 1
        rendering = newRendering
        return from
    }

    /// Takes the rendering as changed in place as a new version; returns the version it came from.
    mutating func advanceInPlace() -> Int {
        version += 1
        return version - 1
    }

    /// Moves on to `newVersion` keeping the rendering: the versions in between were taken elsewhere (by
    /// another process of a shared store, whose writes this one renders after the fact).
    mutating func skip(to newVersion: Int) {
        version = max(version, newVersion)
    }

    /// Takes `newRendering` as a new version when it differs from the current one, and returns the
    /// reset that replaces a viewer's list with it; nil when nothing changed.
    mutating func reset(to newRendering: RenderedList, windowAbove: Int?) -> ListChangeset? {
        guard newRendering != rendering else {
            return nil
        }
        let from = advance(to: newRendering)
        return snapshot.reset(from: from, windowAbove: windowAbove)
    }
}
