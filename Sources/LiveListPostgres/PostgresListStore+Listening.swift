import Foundation
import LiveListEngine
import Logging
import PostgresNIO
import Synchronization

// The listener: LISTEN on a connection of its own, the start-up probe that finds a pooler in
// transaction mode, the notices it receives (other nodes' writes, and the changes to the app's watched
// tables), and reachability.

extension PostgresListStore {
    /// Listens for other nodes' writes, and for the changes to the app's watched tables (on
    /// ``rowsChannel``), on a connection of its own; reconnects with backoff (0.1 s doubling to 2 s)
    /// when the connection is lost, and after each (re)connection has every list catch up and every
    /// stream of ``tableChanges()`` yield ``TableChange/everything`` (notifications sent meanwhile are
    /// lost). Each connection chooses the server anew, in the URL's order, and the pool follows it
    /// there (PostgresListStore+Servers.swift).
    func listen() async {
        var backoff = Duration.milliseconds(100)
        var id = 0
        while !Task.isCancelled {
            id += 1
            do {
                let (server, connection) = try await Self.choose(url, tls: connectionTLS, id: id, logger: logger)
                defer { Task { try? await connection.close() } }
                state.withLock { $0.listener = connection }
                defer { state.withLock { $0.listener = nil } }
                adopt(server)
                // The tables' channel first: once the start-up probe is heard on the other, both listen.
                try await connection.listen(on: Self.rowsChannel) { rowNotifications in
                    try await connection.listen(on: Self.channel) { notifications in
                        state.withLock { $0.listening = true }
                        defer { state.withLock { $0.listening = false } }
                        setReachable(true)
                        backoff = .milliseconds(100)
                        noticeBox.post(.reconnected)
                        tableChangeFeed.post(.everything)
                        // Each channel in order; whichever ends first (the connection is lost) ends both.
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask { [self] in
                                for try await notification in rowNotifications {
                                    receivedRows(notification.payload)
                                }
                            }
                            group.addTask { [self] in
                                for try await notification in notifications {
                                    received(notification.payload)
                                }
                            }
                            try await group.next()
                            group.cancelAll()
                        }
                    }
                }
                throw StoreError(.unavailable, "the database ended the listening connection")
            } catch {
                if Task.isCancelled { break }
                if state.withLock({ state in defer { state.choosingAgain = false }; return state.choosingAgain }) {
                    // Closed on purpose (chooseAgain): choose at once, and keep serving meanwhile.
                    continue
                }
                if setReachable(false) {
                    logger.error("the database \(url) is unreachable (\(error is NoServerError ? "\(error)" : explain(error))); reconnecting")
                }
            }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(2))
        }
    }

    /// What starts a start-up probe's notification (no list name starts with `~`).
    static let probePrefix = "~probe "

    /// Checks that a notification sent through the pool reaches this process's listener: it does not
    /// through a connection pooler in transaction or statement mode, where LISTEN is accepted but
    /// notifications never come, and nodes would never see each other's writes. Such a setup stops
    /// start-up with that cause.
    func checkNotificationsArrive() async throws {
        let listening = ContinuousClock.now + .seconds(10)
        while !state.withLock({ $0.listening }) {
            guard ContinuousClock.now < listening else {
                throw StoreError("could not LISTEN on \(url) within 10 s")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let probe = Self.probePrefix + origin
        try await withConnection { [logger] connection in
            try await drained(connection.query("SELECT pg_notify(\(Self.channel), \(probe))", logger: logger))
        }
        let heard = ContinuousClock.now + .seconds(5)
        while !state.withLock({ $0.heardProbe }) {
            guard ContinuousClock.now < heard else {
                throw StoreError("""
                    a notification sent through \(url) did not reach this node's listener within 5 s: a connection \
                    pooler in transaction or statement mode (PgBouncer's pool_mode = transaction) accepts LISTEN \
                    but never delivers, and nodes would not see each other's writes; connect directly, or \
                    through session pooling
                    """)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// `NAME VERSION`. A notification is a hint, never a work order: any role may send one, so one
    /// that is not a list name and a version is dropped (counted, and logged once a minute at most),
    /// and the queue bounds what a flood of valid-looking ones costs (``NoticeQueue``).
    func received(_ payload: String) {
        if payload.hasPrefix(Self.probePrefix) {
            // A node's start-up probe: this process's own, or another's, which is no news.
            if payload == Self.probePrefix + origin { state.withLock { $0.heardProbe = true } }
            return
        }
        guard let space = payload.lastIndex(of: " "), let version = Int(payload[payload.index(after: space)...]),
            (1 ... ListVersion.maximum).contains(version), ListName(String(payload[..<space])) != nil
        else {
            let (count, report) = state.withLock { state -> (Int, Bool) in
                state.droppedNotices += 1
                let now = ContinuousClock.now
                guard state.lastDropReport.map({ now - $0 >= .seconds(60) }) ?? true else { return (state.droppedNotices, false) }
                state.lastDropReport = now
                return (state.droppedNotices, true)
            }
            if report {
                logger.warning("ignoring notifications on \(Self.channel) that are not NAME VERSION (\(count) so far): some role other than LiveList's sends them")
            }
            return
        }
        noticeBox.post(.changed(name: String(payload[..<space]), version: version))
    }

    /// A notification on ``rowsChannel``: a change of the table it names, or, when it is not one of
    /// the function's, any change (logged once a minute at most; any role may send one).
    func receivedRows(_ payload: String) {
        if let change = Self.tableChange(payload) {
            tableChangeFeed.post(change)
            return
        }
        let (count, report) = state.withLock { state -> (Int, Bool) in
            state.droppedRowNotices += 1
            let now = ContinuousClock.now
            guard state.lastRowDropReport.map({ now - $0 >= .seconds(60) }) ?? true else { return (state.droppedRowNotices, false) }
            state.lastRowDropReport = now
            return (state.droppedRowNotices, true)
        }
        if report {
            logger.warning("""
                notifications on \(Self.rowsChannel) that livelist_rows_changed() does not send (\(count) so far, the last \
                \(Identifier.quotedForMessage(payload))): every live query runs again for each
                """)
        }
        tableChangeFeed.post(.everything)
    }

    /// The change a payload of the function announces; nil when it is not one.
    static func tableChange(_ payload: String) -> TableChange? {
        struct Payload: Decodable {
            var t: String
            var k: [String: [String]]?
        }
        guard let decoded = try? JSONDecoder().decode(Payload.self, from: Data(payload.utf8)), !decoded.t.isEmpty else { return nil }
        return TableChange(table: decoded.t, values: decoded.k.map { $0.mapValues(Set.init) })
    }

    /// Records reachability; true when it changed.
    @discardableResult
    func setReachable(_ reachable: Bool) -> Bool {
        let changed = state.withLock { state -> Bool in
            guard state.reachable != reachable else { return false }
            state.reachable = reachable
            state.unreachableSince = reachable ? nil : .now
            return true
        }
        if changed && reachable {
            logger.notice("the database \(url) is reachable again")
        }
        return changed
    }
}
