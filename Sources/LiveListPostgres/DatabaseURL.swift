import Foundation
import LiveListEngine

/// A PostgreSQL connection URL:
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE&sslrootcert=…&sslcert=…&sslkey=…]`
/// (`postgresql://` too). Percent-escapes in the user, password, database and parameters are decoded.
///
/// `sslmode` has libpq's meaning: `disable` (no TLS), `require` (TLS, the certificate not checked;
/// with `sslrootcert`, checked as `verify-ca` is, as libpq does), `verify-ca` (TLS, the certificate
/// signed by a trusted root) and `verify-full` (that, and the certificate names the host). Without
/// one, a loopback host (exactly `localhost`, an address of 127.0.0.0/8, or `::1`) means `disable` and
/// any other host `verify-full`. `prefer` and `allow`, which neither verify nor refuse clear text, are refused.
/// `sslrootcert` is a PEM file of trusted roots, or `system` (the default) for the system's roots;
/// `sslcert` and `sslkey`, PEM files, give a client certificate.
public struct DatabaseURL: Sendable, Equatable, CustomStringConvertible {
    /// How a connection uses TLS (libpq's `sslmode`).
    public enum TLSMode: String, Sendable, Equatable {
        case disable
        case require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String
    /// How connections use TLS.
    public var tlsMode: TLSMode
    /// A PEM file of trusted roots; nil for the system's roots.
    public var rootCertificatePath: String?
    /// A client certificate (PEM) and its key, for a server that asks for one.
    public var clientCertificatePath: String?
    public var clientKeyPath: String?

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
        var mode: TLSMode?
        var parameters: [String: String] = [:]
        for item in components.queryItems ?? [] {
            guard ["sslmode", "sslrootcert", "sslcert", "sslkey"].contains(item.name) else {
                throw DatabaseURLError("has the unknown parameter \(item.name); sslmode, sslrootcert, sslcert and sslkey are understood")
            }
            guard parameters[item.name] == nil else {
                throw DatabaseURLError("gives \(item.name) twice")
            }
            guard let value = item.value, !value.isEmpty else {
                throw DatabaseURLError("gives \(item.name) no value")
            }
            parameters[item.name] = value
        }
        if let text = parameters["sslmode"] {
            switch text {
            case "prefer", "allow":
                throw DatabaseURLError("asks for sslmode=\(text), which may connect in clear text without saying so; use require, verify-ca or verify-full (or disable, on a network you trust)")
            default:
                guard let known = TLSMode(rawValue: text) else {
                    throw DatabaseURLError("asks for sslmode=\(text); expected disable, require, verify-ca or verify-full")
                }
                mode = known
            }
        }
        let bareHost = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        rootCertificatePath = parameters["sslrootcert"].flatMap { $0 == "system" ? nil : $0 }
        clientCertificatePath = parameters["sslcert"]
        clientKeyPath = parameters["sslkey"]
        tlsMode = mode ?? (Self.isLoopback(bareHost) ? .disable : .verifyFull)
        if tlsMode == .require, parameters["sslrootcert"] != nil {
            // libpq: with a root file, require checks the certificate as verify-ca does.
            tlsMode = .verifyCA
        }
        if tlsMode == .disable, parameters["sslrootcert"] != nil || clientCertificatePath != nil || clientKeyPath != nil {
            throw DatabaseURLError("gives TLS files with sslmode=disable")
        }
        guard (clientCertificatePath == nil) == (clientKeyPath == nil) else {
            throw DatabaseURLError("gives one of sslcert and sslkey; they go together")
        }
        self.host = bareHost
        port = components.port ?? 5432
        guard (1 ... 65535).contains(port) else {
            throw DatabaseURLError("has the port \(port), outside 1–65535")
        }
        self.user = user
        password = components.password
        database = path.removingPercentEncoding ?? path
    }

    /// Parses `text`, taking the password from `passwordFile` when one is named (its text without
    /// the final line break; `LIVELIST_DATABASE_PASSWORD_FILE`, as a Docker or Kubernetes secret).
    ///
    /// - Throws: ``DatabaseURLError`` when the URL has a password too (two sources), or the file
    ///   cannot be read or is empty.
    public init(_ text: String, passwordFile: String?) throws(DatabaseURLError) {
        try self.init(text)
        guard let passwordFile else { return }
        guard password == nil else {
            throw DatabaseURLError("has a password, and LIVELIST_DATABASE_PASSWORD_FILE names another; give one")
        }
        guard let secret = secretFileText(atPath: passwordFile) else {
            throw DatabaseURLError("takes its password from \(passwordFile), which cannot be read")
        }
        guard !secret.isEmpty else {
            throw DatabaseURLError("takes its password from \(passwordFile), which is empty")
        }
        password = secret
    }

    /// The database URL of the environment (nil: the process's): `LIVELIST_DATABASE_URL`, with the password from
    /// `LIVELIST_DATABASE_PASSWORD_FILE` when set; nil when no URL is set.
    ///
    /// - Throws: ``DatabaseURLError`` as ``init(_:passwordFile:)`` does.
    public static func fromEnvironment(_ environment: [String: String]? = nil) throws(DatabaseURLError) -> DatabaseURL? {
        let environment = environment ?? ProcessInfo.processInfo.environment
        guard let text = environment["LIVELIST_DATABASE_URL"], !text.isEmpty else { return nil }
        return try DatabaseURL(text, passwordFile: environment["LIVELIST_DATABASE_PASSWORD_FILE"].flatMap { $0.isEmpty ? nil : $0 })
    }

    /// The URL without its password, for logs, with its TLS mode.
    public var description: String {
        "postgres://\(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database) (sslmode=\(tlsMode.rawValue))"
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
