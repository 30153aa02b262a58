import LiveListEngine
import LiveListHTML
import LiveListHTTP

/// What a `POST /events/TOKEN` asks of an open multiplexed stream: lists to add (with the version the
/// client holds of each, if any) and lists to drop.
struct StreamChange: Equatable {
    var add: [ListName] = []
    var since: [String: Int] = [:]
    var drop: [ListName] = []

    /// The largest body: 64 names of 64 bytes each way, with their versions, and room to spare.
    static let maximumBodyBytes = 32 << 10

    /// Reads `{"add": [NAME…], "since": {NAME: VERSION…}, "drop": [NAME…]}` (every member optional,
    /// no other); an error names what is wrong.
    static func parse(_ body: [UInt8]) -> Result<StreamChange, HTTPError> {
        let value: JSONValue
        do {
            value = try JSONValue.parse(body, maximumDepth: 3)
        } catch {
            return .failure(ErrorCode.malformedJSON.error(error.description))
        }
        guard case let .object(members) = value else {
            return .failure(ErrorCode.invalidType.error("body: expected an object"))
        }
        var change = StreamChange()
        for (key, member) in members {
            switch key {
            case "add", "drop":
                guard case let .array(items) = member else {
                    return .failure(ErrorCode.invalidType.error("\(key): expected an array of list names"))
                }
                var names: [ListName] = []
                for (index, item) in items.enumerated() {
                    guard case let .string(text) = item, let name = ListName(text) else {
                        return .failure(ErrorCode.invalidType.error("\(key)[\(index)]: expected a list name"))
                    }
                    if !names.contains(name) { names.append(name) }
                }
                if key == "add" { change.add = names } else { change.drop = names }
            case "since":
                guard case let .object(versions) = member else {
                    return .failure(ErrorCode.invalidType.error("since: expected an object of versions by list name"))
                }
                for (name, version) in versions {
                    guard ListName(name) != nil, case let .number(text) = version, let parsed = ListVersion.parse(text) else {
                        return .failure(ErrorCode.malformedSince.error("since.\(name): expected a list name and a version (a non-negative integer)"))
                    }
                    change.since[name] = parsed
                }
            default:
                return .failure(ErrorCode.invalidType.error("\(key): not a member of a stream change (add, since, drop)"))
            }
        }
        return .success(change)
    }
}

/// `POST /events/TOKEN`: lists join and leave an open multiplexed stream, as a browser's tabs open and
/// close (docs/PROTOCOL.md, "One stream for a browser").
struct StreamChangeRoutes: Sendable {
    let registry: ListRegistry
    let gate: AccessGate
    let listAccess: ListAccess
    let streamAccess: StreamAccess
    let openStreams: OpenStreams
    let keys: SessionKeys
    let metrics: Metrics
    let configuration: ServerConfiguration

    /// `POST /events/TOKEN`: lists join and leave the open multiplexed stream that `TOKEN` names (its
    /// first event), as a browser's tabs open and close (docs/PROTOCOL.md, "One stream for a
    /// browser"). Only the session that opened the stream may change it, and each list that joins is
    /// decided as at connect: one its viewer may not see gets the empty reset of a name without a list.
    /// A stream opened without a session has no token, so the token alone (which a log or a proxy may
    /// have seen) never changes a stream.
    func changeStream(_ request: HTTPRequest) async -> HTTPResponse {
        guard let session = keys.session(from: request), let token = request.pathParameters["token"], let entry = openStreams.entry(token: token),
            let control = entry.control, control.token != nil, control.session == session, !entry.stream.isClosed
        else {
            return Self.unknownStream
        }
        let change: StreamChange
        switch StreamChange.parse(request.body) {
        case let .success(parsed): change = parsed
        case let .failure(error): return errorResponse(error)
        }
        let decidedAt = gate.revocationCount
        let subject = await gate.subject(request)
        guard subject.identity == entry.identity else {
            // Someone else now (signed in or out since): the stream is not theirs to change.
            return Self.unknownStream
        }
        return await control.serially { [self] in
            await apply(change, to: entry, control: control, subject: subject, session: session, decidedAt: decidedAt)
        }
    }

    private static var unknownStream: HTTPResponse {
        errorResponse(.unknownStream, "no stream open here has this token: open a new one (GET /events)")
    }

    private func apply(
        _ change: StreamChange, to entry: OpenStreams.Entry, control: StreamControl, subject: AccessGate.Subject, session: String?,
        decidedAt: Int
    ) async -> HTTPResponse {
        let multiplexed = control.multiplexed
        let held = Set(multiplexed.names)
        let dropped = change.drop.filter { held.contains($0.rawValue) }
        let joining = change.add.filter { !held.contains($0.rawValue) || dropped.contains($0) }
        let total = held.count - dropped.count + joining.count
        guard total <= configuration.maximumListsPerStream else {
            return errorResponse(.tooManyLists, "the stream would carry \(total) lists, more than the limit of \(configuration.maximumListsPerStream)")
        }
        guard !entry.stream.isClosed else { return Self.unknownStream }
        for name in dropped {
            _ = multiplexed.leave(name.rawValue)
        }
        entry.names.withLock { $0.removeAll(where: dropped.contains) }
        await registry.leave(multiplexed, names: dropped)

        let (allowed, refused, _) = await listAccess.decideEach(joining, for: subject)
        if !refused.isEmpty {
            metrics.refused(subject.identity == nil ? .unauthenticated : .denied)
        }
        for name in joining {
            _ = multiplexed.join(name.rawValue, at: change.since[name.rawValue])
        }
        entry.names.withLock { $0.append(contentsOf: allowed) }
        registry.refuse(multiplexed, names: refused, since: change.since)
        await registry.subscribe(multiplexed, names: allowed, since: change.since, viewer: Viewer(session: session, identity: subject.identity))
        if entry.stream.isClosed {
            // Ended meanwhile: its close may have left its lists before these joined.
            await registry.leave(multiplexed, names: allowed)
        } else if gate.revocationCount != decidedAt {
            await streamAccess.recheck([entry])
        }
        var response = HTTPResponse(status: .noContent)
        response.headers.set("Cache-Control", "no-store")
        return response
    }
}
