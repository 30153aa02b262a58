@testable import LiveListServer
import Testing

@Suite struct SessionTests {
    @Test func csrfTokenMatchesOnlyItsSession() {
        let keys = SessionKeys(secret: Array(repeating: 7, count: 32))
        let session = SessionKeys.newSessionID()
        let other = SessionKeys.newSessionID()
        #expect(session != other && SessionKeys.isSessionID(session))
        let token = keys.csrfToken(for: session)
        #expect(token.utf8.count == 64)
        #expect(keys.verify(token: token, sessionID: session))
        #expect(!keys.verify(token: token, sessionID: other))
        #expect(!keys.verify(token: String(token.dropLast()) + "0", sessionID: session) || token.hasSuffix("0"))
        #expect(!keys.verify(token: "", sessionID: session))
        #expect(!SessionKeys(secret: Array(repeating: 8, count: 32)).verify(token: token, sessionID: session), "another secret")
    }


    @Test func sessionIDsAreValidatedByShape() {
        #expect(!SessionKeys.isSessionID("../../etc/passwd"))
        #expect(!SessionKeys.isSessionID(String(repeating: "A", count: 32)))
        #expect(SessionKeys.isSessionID(String(repeating: "a", count: 32)))
    }

    @Test func tableEvictsTheOldestIdleSessionAtCapacity() {
        let table = SessionTable(capacity: 2, idleTimeout: .seconds(60))
        let start = ContinuousClock.now
        #expect(table.streamOpened("a", lists: ["l"], now: start))
        table.streamClosed("a", now: start)
        #expect(table.streamOpened("b", lists: ["l"], now: start + .seconds(1)))
        #expect(table.streamOpened("c", lists: ["l"], now: start + .seconds(2)))
        #expect(!table.contains("a") && table.contains("b") && table.contains("c"))
        #expect(!table.streamOpened("d", lists: [], now: start + .seconds(3)), "every session has an open stream")
        #expect(table.evictions == 1)
    }

    @Test func idleSessionsExpireUnlessStreaming() {
        let table = SessionTable(capacity: 10, idleTimeout: .seconds(5))
        let start = ContinuousClock.now
        _ = table.streamOpened("idle", lists: [], now: start)
        table.streamClosed("idle", now: start)
        _ = table.streamOpened("live", lists: [], now: start)
        table.expire(now: start + .seconds(10))
        #expect(!table.contains("idle") && table.contains("live"))
    }
}

@Suite struct HMACTests {
    /// RFC 4231 test case 2 (key "Jefe"), computed through the OpenSSL call SessionKeys uses.
    @Test func knownVector() {
        #expect(hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
