import LiveListEngine
import NIOCore
import NIOPosix
import PostgresNIO
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The database's failures in words, for the log and for start-up: what happened, at which server, and
// what to do; never the client library's names for its errors, never a password (docs/DEPLOYMENT.md,
// "The URL").

extension PostgresListStore {
    /// Why `error` happened at `server` (the one in use when nil is given to ``explain(_:)``): the
    /// server's refusal with its message, or the client's failure, in words, with what to do.
    static func failure(_ error: any Error, at server: DatabaseURL.Server, _ url: DatabaseURL) -> String {
        let error = unwrapped(error)
        if let refused = certificateFailure(error, server: server, url) {
            return "the database server \(server): \(refused)"
        }
        if let error = error as? StoreError {
            return error.description
        }
        guard let error = error as? PSQLError else { return "\(error)" }
        if let state = error.serverInfo?[.sqlState] {
            return refusal(state: state, message: error.serverInfo?[.message] ?? "", at: server, url)
        }
        return clientFailure(error.code, underlying: error.underlying, at: server, url)
    }

    /// ``failure(_:at:_:)`` at the server this node uses now.
    func explain(_ error: any Error) -> String {
        Self.failure(error, at: pool.withLock { $0.server }, url)
    }

    /// A refusal the server sent, by its SQLSTATE, with its message (which holds no password).
    static func refusal(state: String, message: String, at server: DatabaseURL.Server, _ url: DatabaseURL) -> String {
        let place = "the database server \(server)"
        switch state {
        case "28P01":
            return "\(place) refused the password of the user \(url.user) (\(message), 28P01): check the password that the URL, "
                + "LIVELIST_DATABASE_PASSWORD_FILE, PGPASSWORD or the password file gives"
        case "28000":
            return "\(place) refused the user \(url.user) (\(message), 28000): its pg_hba.conf has no line that lets this user "
                + "connect to the database \(url.database) from here, this way"
        case "3D000":
            return "the database \(url.database) does not exist on \(place) (3D000): create it (createdb \(url.database)), "
                + "or name another in the URL"
        case "53300":
            return "\(place) has no connection left for the user \(url.user) (\(message), 53300): raise its max_connections, "
                + "lower --database-pool on each node, or find what else holds its connections (docs/DEPLOYMENT.md, \"Connection poolers\")"
        case "57P03":
            return "\(place) is starting up or shutting down (\(message), 57P03); the node tries again"
        case readOnlyState:
            return "\(place) takes no writes (\(message), 25006): it is a standby; name the primary first, "
                + "or give target_session_attrs=read-write with every server"
        default:
            return "\(place): \(message) (\(state))"
        }
    }

    /// A failure of the client itself (no message from the server), in words.
    static func clientFailure(_ code: PSQLError.Code, underlying: (any Error)?, at server: DatabaseURL.Server, _ url: DatabaseURL) -> String {
        let place = "the database server \(server)"
        switch code {
        case .authMechanismRequiresPassword:
            let file = url.passwordFile.map { "the password file \($0.path)" } ?? "the password file (PGPASSFILE, or ~/.pgpass)"
            return "\(place) asks for a password for the user \(url.user), and none was given: put it in the file that "
                + "LIVELIST_DATABASE_PASSWORD_FILE names, in PGPASSWORD, in \(file), or in the URL"
        case .sslUnsupported:
            return "\(place) does not accept TLS, and sslmode=\(url.tlsMode.rawValue) requires it: turn ssl on in its "
                + "postgresql.conf, or give sslmode=disable on a network you trust"
        case .unsupportedAuthMechanism:
            return "\(place) asks for an authentication method that this node does not support: allow scram-sha-256, md5 or "
                + "password for this user in its pg_hba.conf"
        case .saslError:
            return "\(place) and this node did not agree in the SCRAM exchange that checks the password: check the password "
                + "of the user \(url.user)"
        case .connectionError:
            return connectionFailure(underlying, at: server)
        case .serverClosedConnection, .uncleanShutdown:
            return "\(place) closed the connection: it stopped, restarted, or ended the session"
        case .clientClosedConnection:
            return "the connection to \(place) was closed by this node (it is stopping, or moving to another server)"
        case .poolClosed:
            return "the connections to \(place) were closed by this node (it is stopping, or moved to another server)"
        case .queryCancelled:
            return "\(place) cancelled the statement"
        case .receivedUnencryptedDataAfterSSLRequest, .failedToAddSSLHandler:
            return "\(place) broke off the TLS handshake: it may not speak PostgreSQL's TLS on this port"
        default:
            return "\(place) sent something this node could not read (\(underlying.map { "\($0)" } ?? "no detail"))"
        }
    }

    /// Why a connection could not be made: a name that does not resolve, nothing listening, no answer,
    /// a socket that is not there.
    static func connectionFailure(_ underlying: (any Error)?, at server: DatabaseURL.Server) -> String {
        if let failure = underlying as? NIOConnectionError {
            if let first = failure.connectionErrors.first {
                return connectionFailure(first.error, at: server)
            }
            if failure.dnsAError != nil || failure.dnsAAAAError != nil {
                return "the host name \(server.host) does not resolve (no address in DNS): check the URL's host"
            }
        }
        if let failure = underlying as? IOError {
            let reason = String(cString: strerror(failure.errnoCode))
            switch failure.errnoCode {
            case ECONNREFUSED where server.isUnixSocket:
                return "nothing accepts connections on the socket \(server) (connection refused): is PostgreSQL running there?"
            case ECONNREFUSED:
                return "nothing accepts connections at \(server) (connection refused): is PostgreSQL running, and listening on that "
                    + "address and port (listen_addresses, port)?"
            case ENOENT:
                return "there is no socket \(server) (no such file): is PostgreSQL running, with that directory in its "
                    + "unix_socket_directories and that port?"
            case EACCES:
                return "this node may not open the socket \(server) (permission denied): give its user access to the directory"
            case ETIMEDOUT, EHOSTUNREACH, ENETUNREACH:
                return "the database server \(server) cannot be reached (\(reason)): a firewall, or a wrong host or port"
            default:
                return "cannot connect to the database server \(server): \(reason)"
            }
        }
        if case .connectTimeout(let timeout)? = underlying as? ChannelError {
            return "the database server \(server) did not answer within \(timeout.nanoseconds / 1_000_000_000) s: a firewall, or a wrong host or port"
        }
        return "cannot connect to the database server \(server): \(underlying.map { "\($0)" } ?? "no detail")"
    }

    /// Why the database's TLS certificate was refused, in words; nil when `error` is not that.
    static func certificateFailure(_ error: any Error, server: DatabaseURL.Server, _ url: DatabaseURL) -> String? {
        let text = rawDescription(error)
        if text.contains("failedToValidateHostname") {
            return "its TLS certificate does not name the host \(server.host) (sslmode=verify-full checks the name: connect by a name it holds)"
        }
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            let roots = url.rootCertificatePath.map { "sslrootcert \($0)" } ?? "the system's roots"
            return "its TLS certificate did not verify against \(roots): signed by another root, or expired (CERTIFICATE_VERIFY_FAILED)"
        }
        return nil
    }

    /// The error as the client library describes it, to recognise TLS failures by; never shown.
    private static func rawDescription(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        return "\(error.code) \(error.underlying.map { "\($0)" } ?? "")"
    }
}
