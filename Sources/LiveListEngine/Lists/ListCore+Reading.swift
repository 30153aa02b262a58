import LiveListHTML

extension ListCore {
    /// The current state in snapshot form (with ``snapshotState``), as `viewer` sees it.
    func snapshot(for viewer: Viewer) -> ListSnapshot {
        if let perViewer {
            return perViewer.snapshot(for: viewer, list: name, version: version, configuration: configuration)
        }
        var snapshot = renderer.updater.snapshot
        snapshot.state = snapshotState
        return snapshot
    }

    /// The snapshot's JSON with the version it shows, encoded once per version (a list rendered per
    /// viewer encodes each viewer's own).
    func versionedSnapshotJSON(for viewer: Viewer) -> (version: Int, bytes: [UInt8]) {
        if perViewer != nil {
            let snapshot = snapshot(for: viewer)
            return (snapshot.version, snapshot.encodedJSON())
        }
        let version = renderer.updater.version
        if let encodedSnapshot, encodedSnapshot.version == version {
            return encodedSnapshot
        }
        let bytes = snapshot(for: viewer).encodedJSON()
        encodedSnapshot = (version, bytes)
        return (version, bytes)
    }

    /// The list root with its sections, for a full page.
    func pageHTML(for viewer: Viewer) -> (html: String, version: Int) {
        let snapshot = perViewer != nil ? snapshot(for: viewer) : renderer.updater.snapshot
        return (
            configuration.adapter.renderRoot(
                list: name.rawValue, version: snapshot.version, options: configuration.options, rendering: snapshot.rendering
            ),
            snapshot.version
        )
    }

    /// One changeset from `version` to now: empty operations when current, the logged changesets
    /// joined into one compacted diff, or a reset when `version` is too old, unknown or in the future.
    func changes(since version: Int, for viewer: Viewer) -> ListChangeset {
        let current = renderer.updater.version
        guard version != current else {
            return ListChangeset(list: name.rawValue, from: current, version: current, animate: false, operations: [])
        }
        if perViewer != nil {
            // Per-viewer changesets are not logged: a viewer that missed some gets its state anew.
            return snapshot(for: viewer).reset(from: version, windowAbove: configuration.options.windowAbove)
        }
        switch log.lookup(since: version, current: current) {
        case .current:
            return ListChangeset(list: name.rawValue, from: current, version: current, animate: false, operations: [])
        case let .changesets(first, rest):
            let limit = configuration.options.animatableChangeCount
            let joined = log.compactedJoin(first: first, rest: rest, to: renderer.updater.rendering, animatableChangeCount: limit)
            if let windowAbove = configuration.options.windowAbove, joined.operations.count > windowAbove,
                configuration.options.windows(cellCount: renderer.updater.rendering.cellCount)
            {
                // A windowed list's client needs only its window: a windowed reset is smaller than a
                // diff of more operations than the list's window threshold (docs/PROTOCOL.md).
                return renderer.updater.snapshot.reset(from: version, windowAbove: windowAbove)
            }
            return joined
        case .reset:
            return renderer.updater.snapshot.reset(from: version, windowAbove: configuration.options.windowAbove)
        }
    }

    /// The component of a section's `header` or `footer`, when it reports its visibility.
    func findSupplementary(_ part: String, ofSection key: String) -> AnyComponent? {
        guard let section = renderer.data.first(where: { $0.id.key.utf8.elementsEqual(key.utf8) }) else { return nil }
        let node = part == "header" ? section.header : part == "footer" ? section.footer : nil
        guard let node, node.component.reportsVisibility else { return nil }
        return node.component
    }

    /// The cell shown under `key` to a viewer with `identity`, and its section's key: in the viewer's
    /// group for a list whose viewers are grouped, else in the list's rendering.
    func findCell(_ key: String, identity: Identity?) -> (CellNode, String)? {
        if let groups = perViewer as? GroupRenderers {
            return groups.findCell(key, identity: identity)
        }
        return findCell(key)
    }

    /// The cell shown under `key` and its section's key: found through ``currentPositions()``, so that an
    /// action costs the same on a list of any length (a scan of 100,000 cells per visibility report
    /// was a request costing the server hundreds of times what it cost its sender).
    func findCell(_ key: String) -> (CellNode, String)? {
        let data = renderer.data
        guard let (sectionIndex, cellIndex) = currentPositions()[ByteKey(key)], sectionIndex < data.count,
            cellIndex < data[sectionIndex].cells.count
        else { return nil }
        let node = data[sectionIndex].cells[cellIndex]
        guard node.id.key.utf8.elementsEqual(key.utf8) else { return nil }
        return (node, data[sectionIndex].id.key)
    }

    /// Where each cell of the current rendering is (section and cell index), by key: built once per
    /// version, on the first request that needs it. Without a new version the rendering is the same,
    /// and so are the keys and their places.
    func currentPositions() -> [ByteKey: (section: Int, cell: Int)] {
        if let cellPositions, cellPositions.version == renderer.updater.version {
            return cellPositions.positions
        }
        let positions = Self.cellPositions(of: renderer.data)
        cellPositions = (renderer.updater.version, positions)
        return positions
    }

    /// Where each cell of `data` is (section and cell index), by key.
    static func cellPositions(of data: [Section]) -> [ByteKey: (section: Int, cell: Int)] {
        var positions: [ByteKey: (section: Int, cell: Int)] = [:]
        positions.reserveCapacity(data.reduce(0) { $0 + $1.cells.count })
        for (sectionIndex, section) in data.enumerated() {
            for (cellIndex, node) in section.cells.enumerated() {
                positions[ByteKey(node.id.key)] = (sectionIndex, cellIndex)
            }
        }
        return positions
    }
}
