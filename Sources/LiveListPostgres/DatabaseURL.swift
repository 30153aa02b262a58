import Foundation

/// A PostgreSQL connection URL: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable]`
/// (`postgresql://` too). Percent-escapes in the user, password and database are decoded.
public struct DatabaseURL: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String

    /// Parses `text`.
    ///
    /// - Throws: ``DatabaseURLError`` naming what is wrong (never echoing the password).
    public init(_ text: String) throws(DatabaseURLError) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw DatabaseURLError("is not a URL; expected postgres://USER@HOST:PORT/DATABASE")
        }
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw DatabaseURLError("has the scheme \(scheme); expected postgres://USER@HOST:PORT/DATABASE")
        }
        guard let host = components.host, !host.isEmpty else {
            throw DatabaseURLError("names no host; expected postgres://USER@HOST:PORT/DATABASE")
        }
        guard let user = components.user, !user.isEmpty else {
            throw DatabaseURLError("names no user; expected postgres://USER@HOST:PORT/DATABASE")
        }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard !path.isEmpty, !path.contains("/") else {
            throw DatabaseURLError("names no database; expected postgres://USER@HOST:PORT/DATABASE")
        }
        for item in components.queryItems ?? [] {
            switch (item.name, item.value) {
            case ("sslmode", "disable"?):
                break
            case ("sslmode", let mode):
                throw DatabaseURLError("asks for sslmode=\(mode ?? ""); this release connects without TLS only (sslmode=disable): reach a remote database through a TLS tunnel")
            default:
                throw DatabaseURLError("has the unknown parameter \(item.name); only sslmode=disable is understood")
            }
        }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        port = components.port ?? 5432
        guard (1 ... 65535).contains(port) else {
            throw DatabaseURLError("has the port \(port), outside 1–65535")
        }
        self.user = user
        password = components.password
        database = path.removingPercentEncoding ?? path
    }

    /// The URL without its password, for logs.
    public var description: String {
        "postgres://\(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
    }
}

/// A database URL that cannot be used.
public struct DatabaseURLError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String

    init(_ problem: String) {
        description = "the database URL \(problem)"
    }
}
