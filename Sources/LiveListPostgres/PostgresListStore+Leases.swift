import Logging
import PostgresNIO

// Leases: rows of `livelist_leases` renewed every second, for work that runs on one node at a time.

extension PostgresListStore {
    public func holdsLease(_ name: String) -> Bool {
        let (held, started) = state.withLock { state -> (Bool, Bool) in
            if let held = state.leases[name] { return (held, true) }
            state.leases[name] = false
            return (false, false)
        }
        if !started {
            let task = Task(executorPreference: executor) { [self] in await keepLease(name) }
            tasks.withLock { $0.append(task) }
        }
        return held
    }

    /// How long a lease lasts unless its holder renews it (every second).
    static let leaseSeconds = 5

    /// Takes or renews the lease `name` every second: a row of `livelist_leases` that names this
    /// process until a few seconds ahead, taken over only once it has expired. A table, not an
    /// advisory lock, so that no role without rights on LiveList's tables can hold it. A node that
    /// ends gives its leases back; one that dies loses them within ``leaseSeconds``.
    func keepLease(_ name: String) async {
        let origin = self.origin
        while !Task.isCancelled {
            do {
                let held = try await withConnection { [logger] connection in
                    var held = false
                    for try await holder in try await connection.query("""
                        INSERT INTO livelist_leases (name, holder, expires_at)
                        VALUES (\(name), \(origin), now() + make_interval(secs => \(Self.leaseSeconds)))
                        ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
                        WHERE livelist_leases.holder = excluded.holder OR livelist_leases.expires_at < now()
                        RETURNING holder
                        """, logger: logger).decode(String.self) {
                        held = holder == origin
                    }
                    return held
                }
                setLease(name, held)
            } catch {
                setLease(name, false)
            }
            try? await Task.sleep(for: .seconds(1))
        }
        setLease(name, false)
        try? await withConnection { [logger] connection in
            try await drained(connection.query("DELETE FROM livelist_leases WHERE name = \(name) AND holder = \(origin)", logger: logger))
        }
    }

    func setLease(_ name: String, _ held: Bool) {
        state.withLock { $0.leases[name] = held }
    }
}
