import Foundation
import LiveListEngine
import Testing

/// The file store's ended sign-ins (DATA/ended-sign-ins): lines appended, a line a crash cut short
/// dropped, a corrupt line refused with the file and the line named, and the file written anew once
/// it holds more than twice the sign-ins in force.
@Suite struct EndedSignInFileTests {
    private let directory = NSTemporaryDirectory() + "livelist-signins-\(UUID().uuidString)"
    private var file: String { directory + "/ended-sign-ins" }
    private static let now = Int(Date().timeIntervalSince1970)

    private func signIn(_ digit: Character, expiresIn seconds: Int = 3_600) -> EndedSignIn {
        EndedSignIn(digest: String(repeating: digit, count: 32), issued: Self.now - 10, expires: Self.now + seconds)
    }

    private func lines() throws -> [String] {
        try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    @Test func aCorruptLineStopsTheLoadNamingTheFileAndTheLine() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try FileListStore(directory: directory)
        try store.recordEndedSignIn(signIn("a"))
        store.unlock()
        let handle = try #require(FileHandle(forWritingAtPath: file))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("not a sign-in\n".utf8))
        try handle.close()
        let reopened = try FileListStore(directory: directory)
        defer { reopened.unlock() }
        let error = #expect(throws: StoreError.self) { try reopened.load() }
        #expect(error?.description.contains("\(file):2:") == true, "\(String(describing: error))")
        #expect(error?.description.contains("not a sign-in") == true)
    }

    /// A line without its line break was being appended when the process died: it was never
    /// acknowledged, so it is cut off, and the next one follows a whole line.
    @Test func aLineACrashCutShortIsDropped() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try FileListStore(directory: directory)
        try store.recordEndedSignIn(signIn("a"))
        store.unlock()
        let handle = try #require(FileHandle(forWritingAtPath: file))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(String(repeating: "b", count: 20).utf8))
        try handle.close()
        let reopened = try FileListStore(directory: directory)
        defer { reopened.unlock() }
        _ = try reopened.load()
        #expect(try reopened.endedSignIns(now: Self.now) == [signIn("a")])
        try reopened.recordEndedSignIn(signIn("c"))
        #expect(try lines() == [signIn("a"), signIn("c")].map { "\($0.digest) \($0.issued) \($0.expires)" })
    }

    /// Each record is a line; a digest recorded again with a later expiry leaves its earlier line dead,
    /// and once dead lines make the file more than twice what is in force, it is written anew.
    @Test func theFileIsWrittenAnewOnceMostOfItIsDead() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try FileListStore(directory: directory)
        defer { store.unlock() }
        try store.recordEndedSignIn(signIn("a", expiresIn: 100))
        try store.recordEndedSignIn(signIn("a", expiresIn: 100))
        #expect(try lines().count == 1, "the same sign-in again is not written again")
        try store.recordEndedSignIn(signIn("a", expiresIn: 200))
        #expect(try lines().count == 2)
        try store.recordEndedSignIn(signIn("a", expiresIn: 300))
        #expect(try lines().count == 1, "three lines for one sign-in in force: written anew")
        #expect(try store.endedSignIns(now: Self.now) == [signIn("a", expiresIn: 300)])
    }

    /// Lines whose cookies expired are dropped when the file is read, and the file is written anew.
    @Test func expiredLinesAreDroppedAtLoad() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try FileListStore(directory: directory)
        try store.recordEndedSignIn(signIn("a"))
        store.unlock()
        let expired = EndedSignIn(digest: String(repeating: "e", count: 32), issued: Self.now - 100, expires: Self.now - 50)
        let handle = try #require(FileHandle(forWritingAtPath: file))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("\(expired.digest) \(expired.issued) \(expired.expires)\n".utf8))
        try handle.write(contentsOf: Data("\(expired.digest) \(expired.issued) \(expired.expires - 1)\n".utf8))
        try handle.close()
        let reopened = try FileListStore(directory: directory)
        defer { reopened.unlock() }
        _ = try reopened.load()
        #expect(try reopened.endedSignIns(now: Self.now - 1_000) == [signIn("a")])
        #expect(try lines() == ["\(signIn("a").digest) \(signIn("a").issued) \(signIn("a").expires)"])
    }
}
