public import LiveListHTML

/// Limits on what clients may create.
public struct RegistryLimits: Sendable {
    /// The most JSON-driven lists. Default 1,000.
    public var maximumJSONLists = 1_000
    /// Limits on each PUT body's content.
    public var listLimits = JSONListLimits()

    public init() {}
}

/// A write that cannot be done, with its HTTP status and a stable error code.
public struct ListWriteError: Error, Equatable, Sendable, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var detail: String

    public init(status: Int, code: String, detail: String) {
        self.status = status
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(status) \(code): \(detail)" }
}

/// Every list being served, by name: the app lists that Swift code registers and the JSON-driven lists
/// that `PUT` creates, with each name's version high-water mark, so that a name's versions are never
/// reused (not after a restart, not after a `DELETE` and a new `PUT`).
public actor ListRegistry {
    public nonisolated let configuration: ListConfiguration
    public nonisolated let limits: RegistryLimits
    let store: any ListStore
    private var lists: [ListName: HostedList] = [:]
    private var highWater: [String: Int]
    /// Multiplexed streams waiting for lists that do not exist (yet).
    private var waiting: [ListName: [(MultiplexedStream, Int)]] = [:]

    /// Opens the registry on `store`, loading its JSON lists.
    ///
    /// - Throws: `StoreError` when the store cannot be read, or a stored list no longer decodes.
    public init(store: any ListStore, configuration: ListConfiguration = ListConfiguration(), limits: RegistryLimits = RegistryLimits()) async throws {
        self.store = store
        self.configuration = configuration
        self.limits = limits
        let stored = try store.load()
        highWater = stored.highWater
        for (rawName, list) in stored.jsonLists.sorted(by: { $0.key < $1.key }) {
            guard let name = ListName(rawName) else {
                throw StoreError("stored list \"\(rawName)\" has an invalid name")
            }
            let state: JSONListState
            do {
                // Limits are not applied to what was accepted before: a lowered limit must not lose data.
                state = try JSONListState.decode(list.body, limits: JSONListLimits(
                    maximumSections: .max, maximumCells: .max, maximumIDLength: .max, maximumTextLength: .max))
            } catch {
                throw StoreError("stored list \(rawName) no longer decodes (\(error)); the data directory is corrupt")
            }
            let hosted = HostedList(name: name, owner: .json, version: list.version - 1, configuration: configuration, store: store)
            try await hosted.load(state: state, body: list.body, version: list.version)
            lists[name] = hosted
        }
    }

    /// The stored state of an app list, if any (for apps that persist their own state).
    public func appState(_ name: ListName) throws -> [UInt8]? {
        try store.load().appStates[name.rawValue]
    }

    /// Stores an app list's state durably.
    public nonisolated func saveAppState(_ name: ListName, bytes: [UInt8]) throws {
        try store.saveAppState(name: name.rawValue, bytes: bytes)
    }

    /// Registers a list that Swift code renders, rendering its first sections. Its versions continue
    /// from the name's high-water mark.
    ///
    /// - Throws: when the name is taken, or the sections are bad input.
    public func hostApp(_ name: ListName, sections: [Section]) async throws -> HostedList {
        guard lists[name] == nil else {
            throw ListWriteError(status: 409, code: "list_exists", detail: "a list named \(name) is already served")
        }
        let hosted = HostedList(name: name, owner: .app, version: highWater[name.rawValue] ?? 0, configuration: configuration, store: store)
        try await hosted.render(sections)
        lists[name] = hosted
        await attachWaiting(name, to: hosted)
        return hosted
    }

    /// Registers a list whose render reads the viewer (per-session rendering): each viewing stream holds
    /// its own renderer, fed by `render` for its viewer, with the list's shared versions. Call
    /// ``HostedList/refresh()`` when the app's state changes.
    public func hostApp(_ name: ListName, perViewer render: @escaping @Sendable (Viewer) -> [Section]) async throws -> HostedList {
        guard lists[name] == nil else {
            throw ListWriteError(status: 409, code: "list_exists", detail: "a list named \(name) is already served")
        }
        let hosted = HostedList(name: name, owner: .app, version: highWater[name.rawValue] ?? 0, configuration: configuration,
                                store: store, perViewer: render)
        try await hosted.refresh()
        lists[name] = hosted
        await attachWaiting(name, to: hosted)
        return hosted
    }

    /// The list named `name`, if it is served.
    public func list(_ name: ListName) -> HostedList? {
        lists[name]
    }

    /// The names being served, sorted.
    public func names() -> [ListName] {
        lists.keys.sorted()
    }

    /// Every list, for metrics.
    func allLists() -> [HostedList] {
        Array(lists.values)
    }

    /// Creates or replaces a JSON-driven list from a PUT body.
    ///
    /// - Returns: whether the list was created, and the changeset the PUT caused (a creating PUT's
    ///   changeset is `from: 0`; an identical state's has no operations and no new version).
    public func put(_ name: ListName, body: [UInt8], ifMatch: Int?) async throws(ListWriteError) -> (created: Bool, changeset: ListChangeset) {
        let state: JSONListState
        do {
            state = try JSONListState.decode(body, limits: limits.listLimits)
        } catch {
            throw ListWriteError(status: error.status, code: error.code, detail: error.detail)
        }
        if let existing = lists[name] {
            guard existing.owner == .json else {
                throw ListWriteError(status: 409, code: "list_owned_by_app", detail: "\(name) is rendered by the server's Swift code and cannot be written over HTTP")
            }
            do {
                switch try await existing.replace(state: state, body: body, ifMatch: ifMatch) {
                case let .changed(changeset):
                    return (false, changeset)
                case let .unchanged(version):
                    return (false, ListChangeset(list: name.rawValue, from: version, version: version, animate: false, operations: []))
                case let .preconditionFailed(current):
                    throw ListWriteError(status: 412, code: "version_mismatch", detail: "If-Match names version \(ifMatch ?? 0), the list is at \(current)")
                }
            } catch let error as ListWriteError {
                throw error
            } catch {
                throw ListWriteError(status: 500, code: "storage_failed", detail: "\(error)")
            }
        }
        if let ifMatch {
            throw ListWriteError(status: 412, code: "version_mismatch", detail: "If-Match names version \(ifMatch), the list does not exist")
        }
        guard lists.values.filter({ $0.owner == .json }).count < limits.maximumJSONLists else {
            throw ListWriteError(status: 422, code: "too_many_lists", detail: "the server holds its limit of \(limits.maximumJSONLists) JSON lists")
        }
        let hosted = HostedList(name: name, owner: .json, version: highWater[name.rawValue] ?? 0, configuration: configuration, store: store)
        do {
            guard case var .changed(changeset) = try await hosted.replace(state: state, body: body, ifMatch: nil) else {
                throw ListWriteError(status: 500, code: "internal", detail: "a new list made no version")
            }
            changeset.from = 0
            lists[name] = hosted
            await attachWaiting(name, to: hosted)
            return (true, changeset)
        } catch let error as ListWriteError {
            throw error
        } catch {
            throw ListWriteError(status: 500, code: "storage_failed", detail: "\(error)")
        }
    }

    /// Deletes a JSON-driven list: its viewers get the final empty reset, which is also the answer.
    public func delete(_ name: ListName) async throws(ListWriteError) -> ListChangeset {
        guard let existing = lists[name] else {
            throw ListWriteError(status: 404, code: "not_found", detail: "no list named \(name)")
        }
        guard existing.owner == .json else {
            throw ListWriteError(status: 409, code: "list_owned_by_app", detail: "\(name) is rendered by the server's Swift code and cannot be deleted over HTTP")
        }
        do {
            let final = try await existing.delete()
            highWater[name.rawValue] = final.version
            lists.removeValue(forKey: name)
            return final
        } catch {
            throw ListWriteError(status: 500, code: "storage_failed", detail: "\(error)")
        }
    }

    // MARK: - Streams

    /// Adds a multiplexed stream to every list it names. A list that does not exist gets an empty
    /// reset at its high-water mark, and the stream joins it when it is created.
    func subscribe(_ stream: MultiplexedStream, names: [ListName], since: [String: Int], viewer: Viewer = .anonymous) async {
        for name in names {
            if let hosted = lists[name] {
                await hosted.subscribe(stream.sink, since: since[name.rawValue], multiplexed: stream, viewer: viewer)
            } else {
                let version = highWater[name.rawValue] ?? 0
                let empty = ListChangeset(list: name.rawValue, from: since[name.rawValue] ?? 0, version: version,
                                          animate: false, operations: [.reset(html: "", sections: [])])
                let id = stream.advance(name.rawValue, to: version)
                stream.sink.write(eventBytes(id: id, json: empty.encodedJSON()))
                waiting[name, default: []].append((stream, version))
            }
        }
    }

    /// Removes an ended stream from the lists that wait for creation.
    func forget(_ stream: MultiplexedStream) {
        for (name, entries) in waiting {
            let kept = entries.filter { $0.0 !== stream }
            waiting[name] = kept.isEmpty ? nil : kept
        }
    }

    private func attachWaiting(_ name: ListName, to hosted: HostedList) async {
        guard let entries = waiting.removeValue(forKey: name) else { return }
        for (stream, version) in entries where !stream.sink.isClosed {
            await hosted.subscribe(stream.sink, since: version, multiplexed: stream)
        }
    }
}
