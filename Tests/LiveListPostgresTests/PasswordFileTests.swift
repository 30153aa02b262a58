import Foundation
import LiveListPostgres
import Testing

/// The password file (`~/.pgpass`, `PGPASSFILE`) as libpq reads it: the first line whose host, port,
/// database and user match (`*` matching anything, `\` escaping `:` and `\`), used only when no
/// password is given, and never a file that its group or others may access.
@Suite struct PasswordFileTests {
    static let lines = """
        # comment:line:that:is:skipped
        db.internal:5432:lists:alice:first
        db.internal:*:*:alice:second
        *:*:*:bob:b\\:ob\\\\pw:ignored after the colon
        localhost:5432:*:carol:over-the-socket
        h\\:odd:5432:*:dave:escaped-host
        short:line
        """

    private func url(_ text: String, home: String, _ extra: [String: String] = [:]) throws -> DatabaseURL {
        try DatabaseURL(text, passwordFile: nil, environment: ["HOME": home].merging(extra) { $1 })
    }

    @Test func theFirstMatchingLineGivesThePassword() throws {
        let folder = try TemporaryFolder()
        _ = try folder.write(".pgpass", Self.lines)
        let alice = try url("postgres://alice@db.internal/lists", home: folder.path)
        #expect(alice.password == nil, "the file's passwords are per server, not the URL's")
        #expect(alice.password(for: alice.servers[0]) == "first")
        let other = try url("postgres://alice@db.internal:6000/other", home: folder.path)
        #expect(other.password(for: other.servers[0]) == "second")
        let bob = try url("postgres://bob@anywhere/x", home: folder.path)
        #expect(bob.password(for: bob.servers[0]) == "b:ob\\pw")
        let socket = try url("postgres://carol@%2Fvar%2Frun%2Fpostgresql/x", home: folder.path)
        #expect(socket.password(for: socket.servers[0]) == "over-the-socket", "the default socket directory matches localhost")
        let otherSocket = try url("postgres://carol@%2Ftmp/x", home: folder.path)
        #expect(otherSocket.password(for: otherSocket.servers[0]) == nil)
        let escaped = try url("postgres://dave@/x?host=h:odd", home: folder.path)
        #expect(escaped.password(for: escaped.servers[0]) == "escaped-host")
        let nobody = try url("postgres://eve@db.internal/lists", home: folder.path)
        #expect(nobody.password(for: nobody.servers[0]) == nil)
        // A password given anywhere else wins over the file.
        let given = try url("postgres://alice@db.internal/lists", home: folder.path, ["PGPASSWORD": "from-env"])
        #expect(given.password(for: given.servers[0]) == "from-env")
    }

    @Test func pgpassfileNamesAnotherFile() throws {
        let folder = try TemporaryFolder()
        let file = try folder.write("elsewhere", "*:*:*:*:everyone\n")
        let url = try url("postgres://zed@h/db", home: "/nonexistent", ["PGPASSFILE": file])
        #expect(url.password(for: url.servers[0]) == "everyone")
    }

    /// libpq does not use a password file that its group or others may access; the node says why.
    @Test func aFileOthersMayReadIsNotUsed() throws {
        let folder = try TemporaryFolder()
        _ = try folder.write(".pgpass", "*:*:*:*:leaked\n", mode: 0o644)
        let url = try url("postgres://u@h/db", home: folder.path)
        #expect(url.password(for: url.servers[0]) == nil)
        #expect(url.warnings.count == 1)
        #expect(url.warnings.first?.contains("has group or world access") == true, "\(url.warnings)")
        #expect(url.warnings.first?.contains("chmod 0600") == true)
        #expect(url.warnings.first?.contains("leaked") == false)
    }
}
