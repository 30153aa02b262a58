import Foundation
import LiveListEngine

/// A PostgreSQL connection URL, read as libpq reads it:
/// `postgres://[USER[:PASSWORD]@][HOST[:PORT][,HOST[:PORT]…]][/DATABASE][?PARAMETER=VALUE&…]`
/// (`postgresql://` too). Percent-escapes are decoded everywhere; a host that decodes to a path
/// (`%2Fvar%2Frun%2Fpostgresql`) is the directory of a Unix-domain socket.
///
/// The parameters understood are libpq's `host`, `port`, `user`, `password` and `dbname` (each
/// overrides that part of the URL; `host` and `port` take comma-separated lists), `sslmode`,
/// `sslrootcert`, `sslcert`, `sslkey`, `application_name` and `target_session_attrs`; any other is
/// refused, naming it. What neither the URL nor its parameters give comes from libpq's environment
/// variables (``init(_:passwordFile:environment:)``): `PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`,
/// `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT`, `PGSSLKEY`, `PGAPPNAME`,
/// `PGTARGETSESSIONATTRS`, and the password file (`PGPASSFILE`, by default `~/.pgpass`). A URL with
/// no database (`postgres://u@h/`) names the user's, as libpq's default is.
///
/// `sslmode` has libpq's meaning: `disable` (no TLS), `require` (TLS, the certificate not checked;
/// with `sslrootcert`, checked as `verify-ca` is, as libpq does), `verify-ca` (TLS, the certificate
/// signed by a trusted root) and `verify-full` (that, and the certificate names the host). Without
/// one, a URL whose hosts are all loopback addresses (127.0.0.0/8, `::1`), `localhost` or sockets
/// means `disable`, and any other `verify-full`. `prefer` and `allow`, which neither verify nor
/// refuse clear text, are refused. A Unix-domain socket never uses TLS. `sslrootcert` is a PEM file
/// of trusted roots, or `system` (the default) for the system's roots; `sslcert` and `sslkey`, PEM
/// files, give a client certificate.
///
/// With several hosts a node connects to the first that accepts it (with
/// `target_session_attrs=read-write`, the first whose sessions may write), and chooses again in
/// the same order when the one it uses stops answering (docs/DEPLOYMENT.md, "The URL").
public struct DatabaseURL: Sendable, Equatable, CustomStringConvertible {
    /// How a connection uses TLS (libpq's `sslmode`).
    public enum TLSMode: String, Sendable, Equatable {
        case disable
        case require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// Which of several servers a node may settle on (libpq's `target_session_attrs`).
    public enum TargetSession: String, Sendable, Equatable {
        /// The first server that accepts the connection.
        case any
        /// The first server whose sessions may write (`SHOW transaction_read_only` is `off`): a
        /// primary, not a standby.
        case readWrite = "read-write"
    }

    /// One server the URL names: a TCP host (a name or an address) and its port, or the directory of a
    /// Unix-domain socket (a host that starts with `/`) and the port that names the socket's file.
    public struct Server: Sendable, Equatable, CustomStringConvertible {
        /// A host name, an address, or a socket's directory.
        public var host: String
        /// The TCP port, or the number in the socket file's name.
        public var port: Int

        /// A server at `host` (a socket's directory when it starts with `/`) and `port`.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// Whether this is a Unix-domain socket (its host a directory).
        public var isUnixSocket: Bool { host.hasPrefix("/") }

        /// The socket's file, `DIRECTORY/.s.PGSQL.PORT` as libpq names it; nil for TCP.
        public var socketPath: String? {
            guard isUnixSocket else { return nil }
            return (host.hasSuffix("/") ? String(host.dropLast()) : host) + "/.s.PGSQL.\(port)"
        }

        /// Whether connections to it stay on this machine: a socket, `localhost`, or a loopback address.
        public var isLocal: Bool { isUnixSocket || DatabaseURL.isLoopback(host) }

        /// `host:port` (an IPv6 address in brackets), or the socket's file.
        public var description: String {
            if let socketPath { return socketPath }
            return "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        }
    }

    /// The servers to try, in order; never empty.
    public var servers: [Server]
    /// The first server's host.
    public var host: String { servers[0].host }
    /// The first server's port.
    public var port: Int { servers[0].port }
    /// The user to connect as: the URL's, its `user` parameter, or `PGUSER`.
    public var user: String
    /// The password given in the URL, its parameters, `LIVELIST_DATABASE_PASSWORD_FILE` or
    /// `PGPASSWORD`; nil when none was, and the password file is asked for each server
    /// (``password(for:)``).
    public var password: String?
    /// The database: the URL's, its `dbname` parameter, `PGDATABASE`, or else the user's name.
    public var database: String
    /// How connections to TCP hosts use TLS.
    public var tlsMode: TLSMode
    /// A PEM file of trusted roots; nil for the system's roots.
    public var rootCertificatePath: String?
    /// A client certificate (PEM) and its key, for a server that asks for one.
    public var clientCertificatePath: String?
    public var clientKeyPath: String?
    /// What `pg_stat_activity` shows for the node's connections (`application_name`, `PGAPPNAME`);
    /// `livelist` by default.
    public var applicationName: String
    /// Which server a node settles on when there are several.
    public var targetSession: TargetSession
    /// What the node should log once: a password file that was not used, and why.
    public var warnings: [String] = []
    /// The password file's entries, for a server when no password was given.
    var passwordFile: PasswordFile?

    /// Parses `text` alone, without the environment's defaults (no `PG*` variables, no password file).
    ///
    /// - Throws: ``DatabaseURLError`` naming what is wrong (never echoing the password).
    public init(_ text: String) throws(DatabaseURLError) {
        try self.init(text, passwordFile: nil, defaults: ConnectionDefaults(variables: [:], home: nil))
    }

    /// Parses `text`, taking the password from `passwordFile` when one is named (its text without
    /// the final line break; `LIVELIST_DATABASE_PASSWORD_FILE`, as a Docker or Kubernetes secret).
    ///
    /// - Throws: ``DatabaseURLError`` when the URL has a password too (two sources), or the file
    ///   cannot be read or is empty.
    public init(_ text: String, passwordFile: String?) throws(DatabaseURLError) {
        try self.init(text, passwordFile: passwordFile, defaults: ConnectionDefaults(variables: [:], home: nil))
    }

    /// Parses `text`, with libpq's environment variables of `environment` for what the URL leaves out
    /// (the URL and its parameters win), and the password from `passwordFile` (as
    /// ``init(_:passwordFile:)``), else the URL, `PGPASSWORD`, or the password file (`PGPASSFILE`,
    /// by default `.pgpass` in `HOME`).
    ///
    /// - Throws: ``DatabaseURLError`` naming what is wrong and where it came from.
    public init(_ text: String, passwordFile: String?, environment: [String: String]) throws(DatabaseURLError) {
        try self.init(text, passwordFile: passwordFile, defaults: ConnectionDefaults(variables: environment, home: environment["HOME"] ?? ConnectionDefaults.accountHome()))
    }

    init(_ text: String, passwordFile secretPath: String?, defaults: ConnectionDefaults) throws(DatabaseURLError) {
        let uri = try URIParts(text)
        let settings = Settings(uri: uri, defaults: defaults)
        servers = try settings.servers()
        guard let user = settings.value("user") else {
            throw DatabaseURLError("names no user, and PGUSER is not set; expected postgres://USER@HOST:PORT/DATABASE")
        }
        self.user = user
        database = settings.value("dbname") ?? user
        applicationName = settings.value("application_name") ?? "livelist"
        let target = settings.value("target_session_attrs") ?? "any"
        guard let targetSession = TargetSession(rawValue: target) else {
            throw DatabaseURLError("asks for target_session_attrs=\(target)\(settings.origin("target_session_attrs")); any and read-write are understood")
        }
        self.targetSession = targetSession
        (tlsMode, rootCertificatePath, clientCertificatePath, clientKeyPath) = try settings.tls(servers: servers)
        let given = settings.given("password")
        if let secretPath {
            guard given == nil else {
                throw DatabaseURLError("has a password, and LIVELIST_DATABASE_PASSWORD_FILE names another; give one")
            }
            guard let secret = secretFileText(atPath: secretPath) else {
                throw DatabaseURLError("takes its password from \(secretPath), which cannot be read")
            }
            guard !secret.isEmpty else {
                throw DatabaseURLError("takes its password from \(secretPath), which is empty")
            }
            password = secret
        } else {
            password = given ?? defaults.variable("PGPASSWORD")
        }
        if password == nil, let path = defaults.passwordFilePath {
            switch PasswordFile.read(path) {
            case let .found(file): passwordFile = file
            case .missing: break
            case let .ignored(why): warnings.append(why)
            }
        }
    }

    /// The password for `server`: the one given, else the password file's entry for the server, its
    /// port, the database and the user (libpq's `.pgpass` rules), else none.
    public func password(for server: Server) -> String? {
        password ?? passwordFile?.password(host: server.host, port: server.port, database: database, user: user)
    }

    /// The database URL of the environment (nil: the process's): `LIVELIST_DATABASE_URL`, with libpq's
    /// variables for what it leaves out and the password from `LIVELIST_DATABASE_PASSWORD_FILE` when
    /// set; nil when no URL is set.
    ///
    /// - Throws: ``DatabaseURLError`` as ``init(_:passwordFile:environment:)`` does.
    public static func fromEnvironment(_ environment: [String: String]? = nil) throws(DatabaseURLError) -> DatabaseURL? {
        let environment = environment ?? ProcessInfo.processInfo.environment
        guard let text = environment["LIVELIST_DATABASE_URL"], !text.isEmpty else { return nil }
        let file = environment["LIVELIST_DATABASE_PASSWORD_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        return try DatabaseURL(text, passwordFile: file, environment: environment)
    }

    /// The URL without its password, for logs, with its TLS mode (and the session it asks for, when
    /// not any).
    public var description: String {
        let hosts = servers.map { server in
            server.isUnixSocket ? "\(server.host):\(server.port)" : server.description
        }
        let session = targetSession == .any ? "" : ", target_session_attrs=\(targetSession.rawValue)"
        return "postgres://\(user)@\(hosts.joined(separator: ","))/\(database) (sslmode=\(tlsMode.rawValue)\(session))"
    }

    /// Whether `host` names this machine by an address (127.0.0.0/8 as four decimal numbers, or `::1`)
    /// or as exactly `localhost`: connections to it stay on it, so TLS is not needed by default. A name
    /// that merely starts like an address (`127.db.example`) is looked up in DNS, so it is not.
    static func isLoopback(_ host: String) -> Bool {
        if host.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { $0[0] } == 127
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { bytes in bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1 }
        }
        return false
    }
}

/// A database URL that cannot be used.
public struct DatabaseURLError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String

    init(_ problem: String) {
        description = "the database URL \(problem)"
    }
}
