import LiveListEngine
import Logging
import NIOCore
import PostgresNIO

// The server a node uses, of the URL's one or several: chosen in the URL's order, as libpq does (with
// target_session_attrs=read-write, skipping a server whose sessions are read-only), and chosen again
// when it stops answering. The pool, the listener, the leases and the migration all use the chosen
// one (docs/DEPLOYMENT.md, "The URL").

/// The pool of connections on the server a node uses now.
struct ServerPool: Sendable {
    var server: DatabaseURL.Server
    var client: PostgresClient
    /// The task that runs the pool (cancelled when the node moves to another server or closes).
    var task: Task<Void, Never>?
}

/// No server of the URL could be used: each one's failure, in words, naming it.
struct NoServerError: Error, CustomStringConvertible {
    var failures: [String]

    var description: String {
        failures.count == 1 ? failures[0] : "no server of the URL could be used: " + failures.joined(separator: "; ")
    }
}

extension PostgresListStore {
    /// The settings of a connection to `server`: TCP with the URL's TLS, or the Unix-domain socket
    /// (never TLS, never a name to look up), the application name at start-up, a 3 s timeout.
    static func connectionConfiguration(for server: DatabaseURL.Server, _ url: DatabaseURL, tls: PostgresConnection.Configuration.TLS)
        -> PostgresConnection.Configuration
    {
        var configuration: PostgresConnection.Configuration
        if let path = server.socketPath {
            configuration = .init(unixSocketPath: path, username: url.user, password: url.password(for: server), database: url.database)
        } else {
            configuration = .init(
                host: server.host, port: server.port, username: url.user, password: url.password(for: server), database: url.database, tls: tls)
        }
        configuration.options.additionalStartupParameters = [("application_name", url.applicationName)]
        configuration.options.connectTimeout = .seconds(3)
        return configuration
    }

    /// The settings of the pool on `server`, as ``connectionConfiguration(for:_:tls:)``.
    static func clientConfiguration(for server: DatabaseURL.Server, _ url: DatabaseURL, tls: TLSConfiguration?, options: Options)
        -> PostgresClient.Configuration
    {
        var configuration: PostgresClient.Configuration
        if let path = server.socketPath {
            configuration = .init(unixSocketPath: path, username: url.user, password: url.password(for: server), database: url.database)
        } else {
            configuration = .init(
                host: server.host, port: server.port, username: url.user, password: url.password(for: server), database: url.database,
                tls: tls.map { .require($0) } ?? .disable)
        }
        configuration.options.maximumConnections = max(2, options.maximumConnections)
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.additionalStartupParameters = [("application_name", url.applicationName)]
        return configuration
    }

    /// Connects to the URL's servers in order and returns the first that accepts, with its open
    /// connection: with `target_session_attrs=read-write`, a server whose sessions are read-only (a
    /// standby) is passed over. Throws ``NoServerError`` with each one's failure when none does.
    static func choose(_ url: DatabaseURL, tls: PostgresConnection.Configuration.TLS, id: Int, logger: Logger) async throws
        -> (server: DatabaseURL.Server, connection: PostgresConnection)
    {
        var failures: [String] = []
        for server in url.servers {
            let connection: PostgresConnection
            do {
                connection = try await PostgresConnection.connect(configuration: connectionConfiguration(for: server, url, tls: tls), id: id, logger: logger)
            } catch {
                failures.append(failure(error, at: server, url))
                continue
            }
            guard url.targetSession == .readWrite else { return (server, connection) }
            do {
                var readOnly = "on"
                for try await value in try await connection.query("SHOW transaction_read_only", logger: logger).decode(String.self) {
                    readOnly = value
                }
                if readOnly == "off" { return (server, connection) }
                failures.append("the database server \(server) takes no writes (transaction_read_only is on: a standby), and the URL asks for target_session_attrs=read-write")
            } catch {
                failures.append(failure(error, at: server, url))
            }
            try? await connection.close()
        }
        throw NoServerError(failures: failures)
    }

    /// Makes the pool on `server` and runs it on the store's executor.
    func makePool(on server: DatabaseURL.Server) -> ServerPool {
        let client = PostgresClient(configuration: Self.clientConfiguration(for: server, url, tls: clientTLS, options: options), backgroundLogger: logger)
        let task = Task(executorPreference: executor) { await client.run() }
        return ServerPool(server: server, client: client, task: task)
    }

    /// Runs the first pool on the store's executor, and records its task.
    func runPool() -> Task<Void, Never> {
        pool.withLock { current in
            let client = current.client
            let task = Task(executorPreference: executor) { await client.run() }
            current.task = task
            return task
        }
    }

    /// Moves the pool to `server` when it is on another (its calls in flight there fail, as the
    /// server they were on stopped answering); once closed, does nothing.
    func adopt(_ server: DatabaseURL.Server) {
        guard !state.withLock({ $0.closed }) else { return }
        let replaced = pool.withLock { current -> ServerPool? in
            guard current.server != server else { return nil }
            let previous = current
            current = makePool(on: server)
            return previous
        }
        guard let replaced else { return }
        replaced.task?.cancel()
        logger.warning("the database: this node now uses \(server), the first of the URL's servers that accepted it, in place of \(replaced.server)")
    }

    /// Has the listener choose a server again at once (its connection is closed), as a server that
    /// became read-only under `target_session_attrs=read-write` must be left.
    func chooseAgain() {
        let connection = state.withLock { state -> PostgresConnection? in
            guard let listener = state.listener else { return nil }
            state.listener = nil
            state.choosingAgain = true
            return listener
        }
        if let connection {
            logger.warning("the database server \(pool.withLock { $0.server }) takes no writes: choosing a server again (target_session_attrs=read-write)")
            Task { try? await connection.close() }
        }
    }
}
