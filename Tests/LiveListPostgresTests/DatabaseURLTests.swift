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

    @Test(arguments: [
        ("", "is not a URL"),
        ("mysql://u@h/db", "scheme mysql"),
        ("postgres://h:5432/db", "names no user"),
        ("postgres://u@/db", "names no host"),
        ("postgres://u@h:5432/", "names no database"),
        ("postgres://u@h/a/b", "names no database"),
        ("postgres://u@h/db?sslmode=prefer", "sslmode=prefer, which may connect in clear text"),
        ("postgres://u@h/db?sslmode=allow", "sslmode=allow, which may connect in clear text"),
        ("postgres://u@h/db?sslmode=verify", "sslmode=verify; expected disable, require, verify-ca or verify-full"),
        ("postgres://u@h/db?sslmode=require&sslmode=disable", "gives sslmode twice"),
        ("postgres://u@h/db?sslrootcert=", "gives sslrootcert no value"),
        ("postgres://u@h/db?sslmode=disable&sslrootcert=/ca.pem", "TLS files with sslmode=disable"),
        ("postgres://u@h/db?sslcert=/c.pem", "one of sslcert and sslkey"),
        ("postgres://u@h/db?application_name=x", "unknown parameter application_name"),
    ])
    func refusesWhatItCannotUse(text: String, problem: String) {
        #expect {
            try DatabaseURL(text)
        } throws: { error in
            "\(error)".contains(problem) && !"\(error)".contains("hunter2")
        }
    }

    @Test func tlsFollowsLibpqAndIsOnByDefaultAwayFromLoopback() throws {
        #expect(try DatabaseURL("postgres://u@db.example.com/db").tlsMode == .verifyFull)
        #expect(try DatabaseURL("postgres://u@10.0.0.5/db").tlsMode == .verifyFull)
        for loopback in ["localhost", "LOCALHOST", "127.0.0.1", "127.0.0.2", "127.255.255.254", "[::1]", "[0:0:0:0:0:0:0:1]"] {
            #expect(try DatabaseURL("postgres://u@\(loopback)/db").tlsMode == .disable, "\(loopback)")
        }
        // A name that only starts like a loopback address is looked up in DNS: it gets TLS.
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
    }

    @Test func thePasswordComesFromAFileOrTheURLNeverBoth() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-password-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("password").path
        try Data("hunter2\n".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try DatabaseURL("postgres://u@h/db", passwordFile: file).password == "hunter2")
        #expect(try DatabaseURL.fromEnvironment(["LIVELIST_DATABASE_URL": "postgres://u@h/db", "LIVELIST_DATABASE_PASSWORD_FILE": file])?.password == "hunter2")
        #expect(try DatabaseURL.fromEnvironment([:]) == nil)
        let empty = folder.appendingPathComponent("empty").path
        try Data("\n".utf8).write(to: URL(fileURLWithPath: empty))
        for (text, path, problem) in [
            ("postgres://u:s3cr3t-url-pw@h/db", file, "has a password, and LIVELIST_DATABASE_PASSWORD_FILE names another"),
            ("postgres://u@h/db", empty, "which is empty"),
            ("postgres://u@h/db", folder.appendingPathComponent("missing").path, "which cannot be read"),
        ] {
            #expect {
                try DatabaseURL(text, passwordFile: path)
            } throws: { error in
                "\(error)".contains(problem) && !"\(error)".contains("hunter2") && !"\(error)".contains("s3cr3t-url-pw")
            }
        }
    }
}
