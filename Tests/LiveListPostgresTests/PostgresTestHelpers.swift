import Foundation
import LiveListPostgres
import LiveListTestSupport
import Testing

/// What the PostgreSQL tests beyond the contract share: databases of their own, psql, and blocking
/// store calls off the cooperative pool.
enum Postgres {
    /// The second PostgreSQL of Scripts/with-postgres.sh (LIVELIST_TEST_PG_SECOND=1), for several hosts.
    static let secondURL = ProcessInfo.processInfo.environment["LIVELIST_TEST_DATABASE_URL_SECOND"].flatMap { $0.isEmpty ? nil : $0 }
    static let secondPGCTL = ProcessInfo.processInfo.environment["LIVELIST_TEST_PGCTL_SECOND"].flatMap { $0.isEmpty ? nil : $0 }

    /// The psql address of the database `name` on the server of `server` (a URL as text).
    static func address(_ server: String, database name: String) throws -> String {
        var address = try #require(URLComponents(string: server))
        address.path = "/" + name
        return try #require(address.string)
    }

    /// Makes the database `name` on the server of `server`; returns its psql address.
    @discardableResult
    static func createDatabase(_ name: String, on server: String) async throws -> String {
        try await run(try #require(TestDatabase.psql), [server, "-qc", "CREATE DATABASE \(name)"])
        return try address(server, database: name)
    }

    /// Drops the database `name` on the server of `server`, whatever still uses it.
    static func dropDatabase(_ name: String, on server: String) async {
        guard let psql = TestDatabase.psql else { return }
        try? await run(psql, [server, "-qc", "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"])
    }

    /// psql's answer to `sql` on `address`, trimmed.
    static func query(_ address: String, _ sql: String) async throws -> String {
        let psql = try #require(TestDatabase.psql)
        let (status, output) = try await offThread { () throws -> (Int32, [UInt8]) in
            let child = try ChildProcess(psql, [address, "-qAtc", sql], output: .capture)
            let output = PipeReading.readToEnd(child.outputDescriptor)
            child.waitUntilExit()
            return (child.terminationStatus, output)
        }
        #expect(status == 0, "psql \(sql)")
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs a blocking call (a store call, a tool) on a thread of its own: neither Swift's cooperative
    /// pool nor Dispatch's global queue, whose few threads, once blocked, hold back every task of the
    /// test process (Swift's executor runs them on that queue on Linux).
    static func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    /// Runs `tool` with `arguments` to its end on a thread of its own; throws unless it exits 0.
    static func run(_ tool: String, _ arguments: [String]) async throws {
        let status = try await offThread { () throws -> Int32 in
            let child = try ChildProcess(tool, arguments)
            child.waitUntilExit()
            return child.terminationStatus
        }
        guard status == 0 else {
            throw TestDatabase.SetupError("\(tool) \(arguments.dropFirst().joined(separator: " ")) exited with status \(status)")
        }
    }

    /// A name for a database of one test.
    static func databaseName(_ label: String) -> String {
        "livelist_\(label)_\(UInt32.random(in: 0 ... UInt32.max))"
    }

    /// Whether `condition` holds within `timeout`, asked every 50 ms.
    static func eventually(within timeout: Duration, _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            if try await condition() { return true }
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}
