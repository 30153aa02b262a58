@testable import LiveListServer
import LiveListEngine
import LiveListTestSupport
import Testing

@Suite struct SessionTests {
    let keys = SessionKeys(secret: Array(repeating: 7, count: 32))

    /// `text` with the hex digit at `offset` replaced by another one.
    func altered(_ text: String, at offset: Int) -> String {
        var bytes = Array(text.utf8)
        bytes[offset] = bytes[offset] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Equal only when equal; a prefix, an extension, a shorter or a longer text never is (the loop
    /// follows the given text's length, so no early return tells the secret's length).
    @Test func constantTimeEqualityIsEquality() {
        let secret = Array("s3cret-token".utf8)
        #expect(constantTimeEqual(secret, secret))
        for other in ["", "s", "s3cret-toke", "s3cret-tokenn", "s3cret-token-s3cret-token", "S3cret-token", "s3cret-tokem",
                      "s3cret-tokens3cret-token"] {
            #expect(!constantTimeEqual(secret, Array(other.utf8)), "\(other)")
        }
        #expect(constantTimeEqual([], []))
        #expect(!constantTimeEqual([], [0]))
        #expect(!constantTimeEqual([0], []))
    }

    @Test func csrfTokenMatchesOnlyItsSession() {
        let session = keys.mintSession().id
        let other = keys.mintSession().id
        #expect(session != other && SessionKeys.isSessionID(session))
        let token = keys.csrfToken(for: session)
        #expect(token.utf8.count == 64)
        // The scheme, against OpenSSL's one-shot HMAC: the token is the whole HMAC of its prefixed id,
        // as text and as the bytes a page carries; a cookie is the id and half the HMAC of its own prefix.
        #expect(token == hmacSHA256(key: keys.secret, message: Array("livelist-csrf:\(session)".utf8)))
        #expect(keys.csrfTokenBytes(for: session) == Array(token.utf8))
        let (id, cookie) = keys.mintSession()
        #expect(cookie == id + hmacSHA256(key: keys.secret, message: Array("livelist-session:\(id)".utf8)).prefix(32))
        #expect(keys.verify(token: token, sessionID: session))
        #expect(!keys.verify(token: token, sessionID: other))
        #expect(!keys.verify(token: altered(token, at: 63), sessionID: session), "the last digit changed")
        #expect(!keys.verify(token: altered(token, at: 0), sessionID: session), "the first digit changed")
        #expect(!keys.verify(token: String(token.dropLast()), sessionID: session), "one digit short")
        #expect(!keys.verify(token: "", sessionID: session))
        #expect(!SessionKeys(secret: Array(repeating: 8, count: 32)).verify(token: token, sessionID: session), "another secret")
    }

    /// A rotation: keys that sign with a new secret still verify the cookies and CSRF tokens that the
    /// previous one signed, and sign nothing with it; without it, those no longer verify.
    @Test func previousSecretsVerifyWhatTheySignedAndSignNothing() {
        let old = SessionKeys(secret: Array(repeating: 1, count: 32))
        let rotated = SessionKeys(secret: Array(repeating: 2, count: 32), previous: [Array(repeating: 1, count: 32)])
        let (session, cookie) = old.mintSession()
        let token = old.csrfToken(for: session)
        #expect(rotated.sessionID(fromCookie: cookie) == session)
        #expect(rotated.verify(token: token, sessionID: session))
        let (fresh, freshCookie) = rotated.mintSession()
        #expect(old.sessionID(fromCookie: freshCookie) == nil, "the new secret signs")
        #expect(!old.verify(token: rotated.csrfToken(for: fresh), sessionID: fresh))
        let retired = SessionKeys(secret: Array(repeating: 2, count: 32))
        #expect(retired.sessionID(fromCookie: cookie) == nil, "once dropped, the previous secret verifies nothing")
        #expect(!retired.verify(token: token, sessionID: session))
        #expect(rotated.verifyingSecrets == [Array(repeating: 2, count: 32), Array(repeating: 1, count: 32)])
    }

    @Test func sessionIDsAreValidatedByShape() {
        #expect(!SessionKeys.isSessionID("../../etc/passwd"))
        #expect(!SessionKeys.isSessionID(String(repeating: "A", count: 32)))
        #expect(SessionKeys.isSessionID(String(repeating: "a", count: 32)))
    }

    @Test func onlyMintedCookiesCarryASession() {
        let (id, cookie) = keys.mintSession()
        #expect(SessionKeys.isSessionID(id))
        #expect(cookie.utf8.count == 64 && cookie.hasPrefix(id))
        #expect(keys.sessionID(fromCookie: cookie) == id)
        // Any changed digit, of the id or of its tag, is refused.
        for offset in 0 ..< 64 {
            #expect(keys.sessionID(fromCookie: altered(cookie, at: offset)) == nil, "digit \(offset) changed")
        }
        #expect(keys.sessionID(fromCookie: id) == nil, "a cookie from before tags (an id alone)")
        #expect(keys.sessionID(fromCookie: cookie.uppercased()) == nil)
        #expect(keys.sessionID(fromCookie: cookie + "0") == nil)
        #expect(keys.sessionID(fromCookie: String(cookie.dropLast())) == nil)
        #expect(keys.sessionID(fromCookie: "") == nil)
        #expect(keys.sessionID(fromCookie: String(repeating: "é", count: 32)) == nil)
        #expect(SessionKeys(secret: Array(repeating: 8, count: 32)).sessionID(fromCookie: cookie) == nil, "another secret")
        // Another session's tag does not carry this id.
        let other = keys.mintSession().cookie
        #expect(keys.sessionID(fromCookie: id + other.dropFirst(32)) == nil)
        // The tag is not the CSRF token (the two HMACs are kept apart).
        #expect(!keys.csrfToken(for: id).hasPrefix(String(cookie.dropFirst(32))))
    }

    /// Ids come from a pool refilled every 256 sessions: over several refills (and from several
    /// threads at once) every id is new, carries its own tag, and its bytes look random (each hex
    /// digit about as common as the others).
    @Test func mintedIdsAreDistinctAcrossPoolRefills() async {
        let keys = self.keys
        let perTask = 1_000
        let minted = await withTaskGroup(of: [(id: String, cookie: String)].self) { group in
            for _ in 0 ..< 4 {
                group.addTask { (0 ..< perTask).map { _ in keys.mintSession() } }
            }
            var all: [(id: String, cookie: String)] = []
            for await part in group { all += part }
            return all
        }
        #expect(minted.count == 4 * perTask)
        #expect(Set(minted.map(\.id)).count == minted.count, "an id was handed out twice")
        #expect(minted.allSatisfy { keys.sessionID(fromCookie: $0.cookie) == $0.id })
        var counts = [Int](repeating: 0, count: 16)
        for (id, _) in minted {
            for byte in id.utf8 { counts[Int(byte <= 0x39 ? byte - 0x30 : byte - 0x61 + 10)] += 1 }
        }
        // 128,000 digits: 8,000 expected per digit; a zeroed or repeated pool would be far off.
        #expect(counts.allSatisfy { (7_400 ... 8_600).contains($0) }, "digit counts \(counts)")
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

    @Test func evictionTakesTheLeastRecentlySeenIdleSession() {
        let table = SessionTable(capacity: 3, idleTimeout: .seconds(600))
        let start = ContinuousClock.now
        for (offset, id) in ["a", "b", "c"].enumerated() {
            #expect(table.streamOpened(id, lists: [], now: start + .seconds(offset)))
            table.streamClosed(id, now: start + .seconds(offset))
        }
        table.touch("a", now: start + .seconds(5))
        #expect(table.streamOpened("d", lists: [], now: start + .seconds(6)))
        #expect(!table.contains("b") && table.contains("a") && table.contains("c"), "b was seen least recently")
        // A session with an open stream is never evicted; c is the oldest idle one.
        #expect(table.streamOpened("a", lists: [], now: start + .seconds(7)))
        #expect(table.streamOpened("e", lists: [], now: start + .seconds(8)))
        #expect(!table.contains("c") && table.contains("a") && table.contains("d") && table.contains("e"))
        #expect(table.count == 3 && table.evictions == 2)
    }

    @Test func idleSessionsExpireUnlessStreaming() {
        let table = SessionTable(capacity: 10, idleTimeout: .seconds(5))
        let start = ContinuousClock.now
        _ = table.streamOpened("idle", lists: [], now: start)
        table.streamClosed("idle", now: start)
        _ = table.streamOpened("live", lists: [], now: start)
        table.expire(now: start + .seconds(10))
        #expect(!table.contains("idle") && table.contains("live"))
        // Entry drops expired sessions too.
        table.streamClosed("live", now: start + .seconds(10))
        #expect(table.streamOpened("new", lists: [], now: start + .seconds(16)))
        #expect(!table.contains("live") && table.count == 1)
    }

    @Test func aSessionRemembersBoundedListNames() {
        let table = SessionTable(capacity: 10, idleTimeout: .seconds(5))
        let empty = table.approximateBytes
        for index in 0 ..< 1_000 {
            _ = table.streamOpened("s", lists: ["list-\(index)"], now: .now)
        }
        #expect(table.approximateBytes - empty < SessionTable.maximumListsPerSession * 16 + 512)
    }

    /// The table against a model that scans everything (the obvious implementation), over random
    /// operations with a clock that only moves forward.
    @Test func tableAgreesWithAScanningModel() {
        struct Model {
            var sessions: [String: (lastSeen: Int, open: Int)] = [:]
            let capacity: Int
            let timeout: Int
            mutating func opened(_ id: String, now: Int) -> Bool {
                if sessions[id] == nil {
                    sessions = sessions.filter { $0.value.open > 0 || $0.value.lastSeen > now - timeout }
                    if sessions.count >= capacity {
                        guard let oldest = sessions.filter({ $0.value.open == 0 }).min(by: { $0.value.lastSeen < $1.value.lastSeen }) else {
                            return false
                        }
                        sessions[oldest.key] = nil
                    }
                    sessions[id] = (now, 0)
                }
                sessions[id]?.open += 1
                sessions[id]?.lastSeen = now
                return true
            }
            mutating func closed(_ id: String, now: Int) {
                guard let session = sessions[id], session.open > 0 else { return }
                sessions[id] = (now, session.open - 1)
            }
        }
        for seed in UInt64(1) ... 200 {
            var random = SplitMix64(seed: seed)
            let capacity = Int.random(in: 1 ... 8, using: &random)
            let timeout = Int.random(in: 1 ... 40, using: &random)
            let table = SessionTable(capacity: capacity, idleTimeout: .seconds(timeout))
            var model = Model(capacity: capacity, timeout: timeout)
            let start = ContinuousClock.now
            var now = 0
            let ids = (0 ..< 12).map { "s\($0)" }
            for step in 0 ..< 300 {
                now += Int.random(in: 1 ... 3, using: &random)
                let id = ids[Int.random(in: 0 ..< ids.count, using: &random)]
                let instant = start + .seconds(now)
                switch Int.random(in: 0 ..< 10, using: &random) {
                case 0 ..< 4:
                    let accepted = table.streamOpened(id, lists: [], now: instant)
                    #expect(accepted == model.opened(id, now: now), "seed \(seed), step \(step): open \(id)")
                case 4 ..< 8:
                    table.streamClosed(id, now: instant)
                    model.closed(id, now: now)
                case 8:
                    table.touch(id, now: instant)
                    model.sessions[id]?.lastSeen = now
                default:
                    table.expire(now: instant)
                    model.sessions = model.sessions.filter { $0.value.open > 0 || $0.value.lastSeen > now - timeout }
                }
                let held = Set(ids.filter(table.contains))
                if held != Set(model.sessions.keys) || table.count != model.sessions.count {
                    Issue.record("seed \(seed), step \(step): table \(held.sorted()), model \(model.sessions.keys.sorted())")
                    break
                }
            }
        }
    }
}

@Suite struct HMACTests {
    /// RFC 4231 test case 2 (key "Jefe"), computed through OpenSSL's one-shot HMAC, the reference.
    @Test func knownVector() {
        #expect(hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    /// RFC 4231 test cases 1, 2, 6 and 7 through the prepared key: a key shorter than a block, and
    /// keys longer than one (131 bytes), which are hashed first.
    @Test(arguments: [
        ([UInt8](repeating: 0x0B, count: 20), Array("Hi There".utf8), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ([UInt8](repeating: 0xAA, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ([UInt8](repeating: 0xAA, count: 131),
         Array("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".utf8),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ])
    func preparedKeyMatchesRFC4231(key: [UInt8], message: [UInt8], expected: String) {
        #expect(SessionKeys.hex(HMACSHA256(key: key).authenticate(message)) == expected)
    }

    /// Random keys (empty, shorter, as long as, and longer than a block) and messages (empty to several
    /// blocks) give what OpenSSL's one-shot HMAC gives, whole or as a prefix and a text, and a prepared
    /// key gives the same on reuse.
    @Test func preparedKeyMatchesOneShot() async {
        let seed = UInt64.random(in: 1 ... .max)
        print("HMACTests seed \(seed)")
        var random = SplitMix64(seed: seed)
        for round in 0 ..< 300 {
            if round % 20 == 0 { await Task.yield() }  // leave the cooperative pool to other suites' servers
            let key = (0 ..< Int.random(in: 0 ... 150, using: &random)).map { _ in UInt8.random(in: 0 ... 255, using: &random) }
            let mac = HMACSHA256(key: key)
            for _ in 0 ..< 3 {
                let message = (0 ..< Int.random(in: 0 ... 300, using: &random)).map { _ in UInt8.random(in: 0 ... 255, using: &random) }
                #expect(SessionKeys.hex(mac.authenticate(message)) == hmacSHA256(key: key, message: message),
                        "seed \(seed), round \(round), key of \(key.count) bytes, message of \(message.count)")
                // In two parts, a byte prefix and a text (as tags and tokens are made), with non-ASCII text.
                let cut = Int.random(in: 0 ... message.count, using: &random)
                let text = String((0 ..< Int.random(in: 0 ... 40, using: &random)).map { _ in "aé✓😀-".randomElement(using: &random)! })
                let prefix = Array(message[..<cut])
                #expect(mac.withMAC(of: prefix, text) { SessionKeys.hex($0) } == hmacSHA256(key: key, message: prefix + Array(text.utf8)),
                        "seed \(seed), round \(round), prefix of \(prefix.count) bytes, text \(text)")
            }
        }
    }
}
