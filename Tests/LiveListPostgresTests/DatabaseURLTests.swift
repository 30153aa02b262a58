import Foundation
import LiveListPostgres
import Testing

@Suite struct DatabaseURLTests {
    @Test func readsEveryPartAndDecodesEscapes() throws {
        let url = try DatabaseURL("postgres://live%40list:p%3Ass@db.internal:6543/my%20lists?sslmode=disable")
        #expect(url.host == "db.internal")
        #expect(url.port == 6543)
        #expect(url.user == "live@list")
        #expect(url.password == "p:ss")
        #expect(url.database == "my lists")
        #expect(url.applicationName == "livelist")
        #expect(url.targetSession == .any)
    }

    @Test func defaultsThePortAndTakesIPv6Hosts() throws {
        let url = try DatabaseURL("postgresql://livelist@[::1]/livelist")
        #expect(url.host == "::1")
        #expect(url.port == 5432)
        #expect(url.password == nil)
        #expect(url.description == "postgres://livelist@[::1]:5432/livelist (sslmode=disable)")
    }

    @Test func theDescriptionNeverShowsThePassword() throws {
        let url = try DatabaseURL("postgres://livelist:hunter2@127.0.0.1:5432/livelist")
        #expect(!url.description.contains("hunter2"))
    }

    /// libpq: an empty database means the user's own name.
    @Test func aURLWithoutADatabaseNamesTheUsers() throws {
        #expect(try DatabaseURL("postgres://alice@h/").database == "alice")
        #expect(try DatabaseURL("postgres://alice@h").database == "alice")
        #expect(try DatabaseURL("postgres://alice@h?sslmode=disable").database == "alice")
    }

    @Test(arguments: [
        ("", "is not a URL"),
        ("host=db user=u", "is not a URL"),
        ("mysql://u@h/db", "scheme mysql"),
        ("postgres://h:5432/db", "names no user"),
        ("postgres://u@/db", "names no host"),
        ("postgres://u@h/a/b", "names no database"),
        ("postgres://u@h:99999/db", "port 99999, outside 1–65535"),
        ("postgres://u@h:5x/db", "port 5x, which is not a number"),
        ("postgres://u@h1,,h2/db", "an empty host"),
        ("postgres://u@[::1/db", "whose [ is not closed"),
        ("postgres://u@fe80::1/db", "an IPv6 address goes in brackets"),
        ("postgres://u@h1,h2/db?port=1,2,3", "gives 3 ports for 2 hosts"),
        ("postgres://u:%zz@h/db", "invalid percent-escape in its password"),
        ("postgres://u@h/db?sslmode=prefer", "sslmode=prefer, which may connect in clear text"),
        ("postgres://u@h/db?sslmode=allow", "sslmode=allow, which may connect in clear text"),
        ("postgres://u@h/db?sslmode=verify", "sslmode=verify; expected disable, require, verify-ca or verify-full"),
        ("postgres://u@h/db?sslmode=require&sslmode=disable", "gives sslmode twice"),
        ("postgres://u@h/db?sslrootcert=", "gives sslrootcert no value"),
        ("postgres://u@h/db?sslmode", "gives sslmode no value"),
        ("postgres://u@h/db?sslmode=disable&sslrootcert=/ca.pem", "TLS files with sslmode=disable"),
        ("postgres://u@h/db?sslcert=/c.pem", "one of sslcert and sslkey"),
        ("postgres://u@h/db?target_session_attrs=standby", "target_session_attrs=standby; any and read-write are understood"),
        ("postgres://u@h/db?connect_timeout=3", "unknown parameter connect_timeout; host, port, user, password, dbname, sslmode"),
    ])
    func refusesWhatItCannotUse(text: String, problem: String) {
        #expect {
            try DatabaseURL(text)
        } throws: { error in
            "\(error)".contains(problem) && !"\(error)".contains("hunter2")
        }
    }

    /// Loopback is an address (127.0.0.0/8, ::1) or exactly localhost: a name that only starts like one
    /// is looked up in DNS, so it gets TLS by default.
    @Test func tlsFollowsLibpqAndIsOnByDefaultAwayFromLoopback() throws {
        #expect(try DatabaseURL("postgres://u@db.example.com/db").tlsMode == .verifyFull)
        #expect(try DatabaseURL("postgres://u@10.0.0.5/db").tlsMode == .verifyFull)
        for loopback in ["localhost", "LOCALHOST", "127.0.0.1", "127.0.0.2", "127.255.255.254", "[::1]", "[0:0:0:0:0:0:0:1]"] {
            #expect(try DatabaseURL("postgres://u@\(loopback)/db").tlsMode == .disable, "\(loopback)")
        }
        for name in ["127.db.example", "127.0.0.1.nip.io", "localhost.example", "127.1", "127.0.0.256", "[::2]", "[::ffff:127.0.0.1]"] {
            #expect(try DatabaseURL("postgres://u@\(name)/db").tlsMode == .verifyFull, "\(name)")
        }
        #expect(try DatabaseURL("postgres://u@127.0.0.1/db?sslmode=verify-full").tlsMode == .verifyFull)
        #expect(try DatabaseURL("postgres://u@h/db?sslmode=require").tlsMode == .require)
        // libpq: require with a root file checks the certificate as verify-ca does.
        let rooted = try DatabaseURL("postgres://u@h/db?sslmode=require&sslrootcert=%2Fetc%2Froot.pem")
        #expect(rooted.tlsMode == .verifyCA && rooted.rootCertificatePath == "/etc/root.pem")
        #expect(try DatabaseURL("postgres://u@h/db?sslrootcert=system").rootCertificatePath == nil)
        let client = try DatabaseURL("postgres://u@h/db?sslmode=verify-ca&sslcert=/c.pem&sslkey=/k.pem")
        #expect(client.clientCertificatePath == "/c.pem" && client.clientKeyPath == "/k.pem")
        // A list with one host away from loopback is verified as a whole.
        #expect(try DatabaseURL("postgres://u@127.0.0.1,db.example.com/db").tlsMode == .verifyFull)
    }

    @Test func readsSeveralHostsEachWithItsPort() throws {
        let url = try DatabaseURL("postgresql://u:p@h1,h2:5433,[::1]:6000/db?target_session_attrs=read-write")
        #expect(url.servers == [.init(host: "h1", port: 5432), .init(host: "h2", port: 5433), .init(host: "::1", port: 6000)])
        #expect(url.targetSession == .readWrite)
        #expect(url.description == "postgres://u@h1:5432,h2:5433,[::1]:6000/db (sslmode=verify-full, target_session_attrs=read-write)")
        // One port for every host, or one each, from the port parameter.
        #expect(try DatabaseURL("postgres://u@h1,h2/db?port=7000").servers.map(\.port) == [7000, 7000])
        #expect(try DatabaseURL("postgres://u@h1,h2/db?port=7000,7001").servers.map(\.port) == [7000, 7001])
        #expect(try DatabaseURL("postgres://u@h1:5433,h2/db").servers.map(\.port) == [5433, 5432])
        #expect(try DatabaseURL("postgres://u@h/db?target_session_attrs=any").targetSession == .any)
    }

    /// A host that is a path is a Unix-domain socket's directory: no TLS, its socket file named as
    /// libpq names it.
    @Test func aPathHostIsAUnixSocket() throws {
        let encoded = try DatabaseURL("postgresql://u@%2Fvar%2Frun%2Fpostgresql/db")
        #expect(encoded.servers == [.init(host: "/var/run/postgresql", port: 5432)])
        #expect(encoded.servers[0].isUnixSocket)
        #expect(encoded.servers[0].socketPath == "/var/run/postgresql/.s.PGSQL.5432")
        #expect(encoded.tlsMode == .disable)
        let parameter = try DatabaseURL("postgresql://u@/db?host=/tmp/pg&port=6543")
        #expect(parameter.servers[0].socketPath == "/tmp/pg/.s.PGSQL.6543")
        #expect(!DatabaseURL.Server(host: "db.internal", port: 5432).isUnixSocket)
        #expect(DatabaseURL.Server(host: "db.internal", port: 5432).socketPath == nil)
    }

    /// libpq's query parameters host, port, user, password and dbname override the URL's parts.
    @Test func theParametersOverrideTheURLsParts() throws {
        let url = try DatabaseURL("postgres://u:p@h:1111/db?host=other&port=2222&user=v&password=q&dbname=lists&application_name=node-1")
        #expect(url.servers == [.init(host: "other", port: 2222)])
        #expect(url.user == "v" && url.password == "q" && url.database == "lists")
        #expect(url.applicationName == "node-1")
    }

    /// libpq's environment variables fill in what the URL leaves out; the URL wins.
    @Test func theEnvironmentGivesWhatTheURLLeavesOut() throws {
        let environment = [
            "PGHOST": "envhost1,envhost2", "PGPORT": "6000", "PGUSER": "envuser", "PGPASSWORD": "envpass", "PGDATABASE": "envdb",
            "PGSSLMODE": "require", "PGAPPNAME": "from-env", "PGTARGETSESSIONATTRS": "read-write",
        ]
        let filled = try DatabaseURL("postgres://", passwordFile: nil, environment: environment)
        #expect(filled.servers == [.init(host: "envhost1", port: 6000), .init(host: "envhost2", port: 6000)])
        #expect(filled.user == "envuser" && filled.password == "envpass" && filled.database == "envdb")
        #expect(filled.tlsMode == .require && filled.applicationName == "from-env" && filled.targetSession == .readWrite)
        let given = try DatabaseURL(
            "postgres://u:p@h:5433/db?sslmode=verify-ca&application_name=url&target_session_attrs=any", passwordFile: nil, environment: environment)
        #expect(given.servers == [.init(host: "h", port: 5433)])
        #expect(given.user == "u" && given.password == "p" && given.database == "db")
        #expect(given.tlsMode == .verifyCA && given.applicationName == "url" && given.targetSession == .any)
        // Without PGDATABASE, the user's name.
        #expect(try DatabaseURL("postgres://h", passwordFile: nil, environment: ["PGUSER": "carol"]).database == "carol")
        #expect {
            try DatabaseURL("postgres://u@h/db", passwordFile: nil, environment: ["PGSSLMODE": "prefer"])
        } throws: { error in
            "\(error)".contains("sslmode=prefer (from PGSSLMODE)")
        }
        #expect {
            try DatabaseURL("postgres://u@h/db", passwordFile: nil, environment: ["PGTARGETSESSIONATTRS": "primary"])
        } throws: { error in
            "\(error)".contains("target_session_attrs=primary (from PGTARGETSESSIONATTRS)")
        }
        // The URL alone reads no environment.
        #expect(throws: DatabaseURLError.self) { try DatabaseURL("postgres://") }
    }

    @Test func thePasswordComesFromAFileOrTheURLNeverBoth() throws {
        let folder = try TemporaryFolder()
        let file = try folder.write("password", "hunter2\n")
        #expect(try DatabaseURL("postgres://u@h/db", passwordFile: file).password == "hunter2")
        #expect(try DatabaseURL.fromEnvironment(["LIVELIST_DATABASE_URL": "postgres://u@h/db", "LIVELIST_DATABASE_PASSWORD_FILE": file])?.password == "hunter2")
        #expect(try DatabaseURL.fromEnvironment([:]) == nil)
        // The file wins over PGPASSWORD, and the URL over PGPASSWORD.
        #expect(try DatabaseURL("postgres://u@h/db", passwordFile: file, environment: ["PGPASSWORD": "other"]).password == "hunter2")
        #expect(try DatabaseURL("postgres://u:inurl@h/db", passwordFile: nil, environment: ["PGPASSWORD": "other"]).password == "inurl")
        let empty = try folder.write("empty", "\n")
        for (text, path, problem) in [
            ("postgres://u:s3cr3t-url-pw@h/db", file, "has a password, and LIVELIST_DATABASE_PASSWORD_FILE names another"),
            ("postgres://u@h/db?password=s3cr3t-url-pw", file, "has a password, and LIVELIST_DATABASE_PASSWORD_FILE names another"),
            ("postgres://u@h/db", empty, "which is empty"),
            ("postgres://u@h/db", folder.path + "/missing", "which cannot be read"),
        ] {
            #expect {
                try DatabaseURL(text, passwordFile: path)
            } throws: { error in
                "\(error)".contains(problem) && !"\(error)".contains("hunter2") && !"\(error)".contains("s3cr3t-url-pw")
            }
        }
    }
}

/// A folder of its own under the temporary directory, removed when the value goes.
final class TemporaryFolder {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-url-\(UInt32.random(in: 0 ... .max))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Writes `text` to the file `name` in the folder, with `mode`; its path.
    func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
        let file = path + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file)
        return file
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
