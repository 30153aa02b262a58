import Foundation

// Reading a `postgres://` URL as libpq does, and merging it with the parameters and the environment's
// defaults (docs/DEPLOYMENT.md, "The URL").

/// The parts of a URL, percent-decoded, before any default: libpq's URI grammar,
/// `SCHEME://[USER[:PASSWORD]@][HOST[:PORT][,…]][/DATABASE][?PARAMETERS]`.
struct URIParts {
    var user: String?
    var password: String?
    /// Each host of the URL with its port, when it gives one.
    var hosts: [(host: String, port: String?)] = []
    var database: String?
    var parameters: [String: String] = [:]

    /// The parameters understood, in the order the refusal of another names them.
    static let understood = [
        "host", "port", "user", "password", "dbname", "sslmode", "sslrootcert", "sslcert", "sslkey", "application_name", "target_session_attrs",
    ]

    init(_ text: String) throws(DatabaseURLError) {
        guard let schemeEnd = text.range(of: "://") else {
            throw DatabaseURLError("is not a URL; expected postgres://USER@HOST:PORT/DATABASE (key=value connection strings are not read)")
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw DatabaseURLError("has the scheme \(scheme); expected postgres://USER@HOST:PORT/DATABASE")
        }
        var rest = text[schemeEnd.upperBound...]
        var query: Substring?
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var authority = rest
        var path: Substring?
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = rest[rest.index(after: slash)...]
        }
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                user = try Self.decoded(userInfo[..<colon], "its user")
                password = try Self.decoded(userInfo[userInfo.index(after: colon)...], "its password")
            } else {
                user = try Self.decoded(userInfo, "its user")
            }
            if user?.isEmpty == true { user = nil }
        }
        if !authority.isEmpty {
            for entry in authority.split(separator: ",", omittingEmptySubsequences: false) {
                hosts.append(try Self.host(entry))
            }
        }
        if let path, !path.isEmpty {
            let name = try Self.decoded(path, "its database")
            guard !name.contains("/") else {
                throw DatabaseURLError("has the path /\(name), which names no database; expected postgres://USER@HOST:PORT/DATABASE")
            }
            database = name
        }
        for item in (query ?? "").split(separator: "&") {
            guard let equals = item.firstIndex(of: "=") else {
                throw DatabaseURLError("gives \(item) no value")
            }
            let name = try Self.decoded(item[..<equals], "a parameter's name")
            guard Self.understood.contains(name) else {
                throw DatabaseURLError("has the unknown parameter \(name); \(Self.understood.dropLast().joined(separator: ", ")) and \(Self.understood.last ?? "") are understood")
            }
            let value = try Self.decoded(item[item.index(after: equals)...], name == "password" ? "its password" : "its \(name)")
            guard parameters[name] == nil else {
                throw DatabaseURLError("gives \(name) twice")
            }
            guard !value.isEmpty else {
                throw DatabaseURLError("gives \(name) no value")
            }
            parameters[name] = value
        }
    }

    /// One entry of the host list: `HOST`, `HOST:PORT`, `[ADDRESS]` or `[ADDRESS]:PORT`, the host
    /// percent-decoded (a socket's directory is written `%2Fvar%2Frun%2Fpostgresql`).
    private static func host(_ entry: Substring) throws(DatabaseURLError) -> (host: String, port: String?) {
        var host = entry
        var port: Substring?
        if entry.hasPrefix("[") {
            guard let close = entry.firstIndex(of: "]") else {
                throw DatabaseURLError("has the host \(entry), whose [ is not closed")
            }
            host = entry[entry.index(after: entry.startIndex) ..< close]
            let after = entry[entry.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw DatabaseURLError("has the host \(entry), with \(after) after its ]")
                }
                port = after.dropFirst()
            }
        } else if let colon = entry.lastIndex(of: ":") {
            guard entry.firstIndex(of: ":") == colon else {
                throw DatabaseURLError("has the host \(entry); an IPv6 address goes in brackets, [ADDRESS]:PORT")
            }
            host = entry[..<colon]
            port = entry[entry.index(after: colon)...]
        }
        let name = try decoded(host, "a host")
        guard !name.isEmpty else {
            throw DatabaseURLError("has an empty host in its list of hosts; expected postgres://USER@HOST:PORT,HOST:PORT/DATABASE")
        }
        return (name, port.map(String.init))
    }

    /// `text` percent-decoded; a refusal names `what` (never the text, which may be a password).
    static func decoded(_ text: Substring, _ what: String) throws(DatabaseURLError) -> String {
        guard text.contains("%") else { return String(text) }
        guard let decoded = String(text).removingPercentEncoding else {
            throw DatabaseURLError("has an invalid percent-escape in \(what)")
        }
        return decoded
    }
}

/// The URL's parts, its parameters and the environment's defaults, merged as libpq merges them: a
/// parameter wins over the URL's part, which wins over the environment variable.
struct Settings {
    let uri: URIParts
    let defaults: ConnectionDefaults

    /// libpq's environment variable of each setting.
    static let variables = [
        "host": "PGHOST", "port": "PGPORT", "user": "PGUSER", "dbname": "PGDATABASE", "sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT",
        "sslcert": "PGSSLCERT", "sslkey": "PGSSLKEY", "application_name": "PGAPPNAME", "target_session_attrs": "PGTARGETSESSIONATTRS",
    ]

    /// What the URL itself gives for `name` (a parameter, else its part of the URL).
    func given(_ name: String) -> String? {
        if let parameter = uri.parameters[name] { return parameter }
        switch name {
        case "user": return uri.user
        case "password": return uri.password
        case "dbname": return uri.database
        default: return nil
        }
    }

    /// The setting `name`: what the URL gives, else its environment variable.
    func value(_ name: String) -> String? {
        given(name) ?? Self.variables[name].flatMap(defaults.variable)
    }

    /// ` (from PGNAME)` when the setting `name` came from the environment, for refusals.
    func origin(_ name: String) -> String {
        guard given(name) == nil, let variable = Self.variables[name] else { return "" }
        return " (from \(variable))"
    }

    /// The servers: the hosts of the `host` parameter, else the URL's, else `PGHOST`; each with its
    /// port from the `port` parameter, else the URL, else `PGPORT`, else 5432 (one port for every
    /// host, or one per host).
    func servers() throws(DatabaseURLError) -> [DatabaseURL.Server] {
        var hosts: [String]
        if let listed = uri.parameters["host"] ?? (uri.hosts.isEmpty ? defaults.variable("PGHOST") : nil) {
            hosts = listed.split(separator: ",", omittingEmptySubsequences: false).map { String($0) }
            guard !hosts.contains(where: \.isEmpty) else {
                throw DatabaseURLError("has an empty host in its list of hosts \(listed)\(origin("host"))")
            }
        } else {
            hosts = uri.hosts.map(\.host)
        }
        guard !hosts.isEmpty else {
            throw DatabaseURLError("names no host, and PGHOST is not set; expected postgres://USER@HOST:PORT/DATABASE")
        }
        var ports: [String]?
        var portOrigin = ""
        if let listed = uri.parameters["port"] {
            ports = listed.split(separator: ",", omittingEmptySubsequences: false).map { String($0) }
        } else if uri.hosts.contains(where: { $0.port != nil }) {
            ports = uri.hosts.map { $0.port ?? "" }
        } else if let listed = defaults.variable("PGPORT") {
            ports = listed.split(separator: ",", omittingEmptySubsequences: false).map { String($0) }
            portOrigin = " (from PGPORT)"
        }
        if let ports, ports.count != 1, ports.count != hosts.count {
            throw DatabaseURLError("gives \(ports.count) ports\(portOrigin) for \(hosts.count) hosts; give one port, or one for each host")
        }
        var servers: [DatabaseURL.Server] = []
        for (index, host) in hosts.enumerated() {
            let text = ports.map { $0.count == 1 ? $0[0] : $0[index] } ?? ""
            guard !text.isEmpty else {
                servers.append(DatabaseURL.Server(host: host, port: 5432))
                continue
            }
            guard text.utf8.allSatisfy({ (UInt8(ascii: "0") ... UInt8(ascii: "9")).contains($0) }), let port = Int(text) else {
                throw DatabaseURLError("has the port \(text)\(portOrigin), which is not a number")
            }
            guard (1 ... 65535).contains(port) else {
                throw DatabaseURLError("has the port \(port)\(portOrigin), outside 1–65535")
            }
            servers.append(DatabaseURL.Server(host: host, port: port))
        }
        return servers
    }

    /// The TLS mode and files. TLS files under `sslmode=disable` are refused when the URL gives them,
    /// and set aside when they come from the environment (as libpq ignores them).
    func tls(servers: [DatabaseURL.Server]) throws(DatabaseURLError)
        -> (mode: DatabaseURL.TLSMode, root: String?, certificate: String?, key: String?)
    {
        var mode: DatabaseURL.TLSMode?
        if let text = value("sslmode") {
            switch text {
            case "prefer", "allow":
                throw DatabaseURLError(
                    "asks for sslmode=\(text)\(origin("sslmode")), which may connect in clear text without saying so; "
                        + "use require, verify-ca or verify-full (or disable, on a network you trust)")
            default:
                guard let known = DatabaseURL.TLSMode(rawValue: text) else {
                    throw DatabaseURLError("asks for sslmode=\(text)\(origin("sslmode")); expected disable, require, verify-ca or verify-full")
                }
                mode = known
            }
        }
        var resolved = mode ?? (servers.allSatisfy(\.isLocal) ? .disable : .verifyFull)
        if resolved == .disable {
            guard given("sslrootcert") == nil, given("sslcert") == nil, given("sslkey") == nil else {
                throw DatabaseURLError("gives TLS files with sslmode=disable")
            }
            return (.disable, nil, nil, nil)
        }
        let root = value("sslrootcert")
        let (certificate, key) = (value("sslcert"), value("sslkey"))
        guard (certificate == nil) == (key == nil) else {
            throw DatabaseURLError("gives one of sslcert and sslkey\(origin(certificate == nil ? "sslkey" : "sslcert")); they go together")
        }
        if resolved == .require, root != nil {
            // libpq: with a root file, require checks the certificate as verify-ca does.
            resolved = .verifyCA
        }
        return (resolved, root == "system" ? nil : root, certificate, key)
    }
}
