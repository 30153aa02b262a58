import Foundation
import LiveListEngine

// Ended sign-ins (sign-outs) in the ListStore contract: every store keeps them until their cookies
// expire, across a reopen; a shared store hands each to the other processes' revocations.

extension ListStoreContract {
    /// Now, in whole seconds since 1970: ended sign-ins expire by the clock.
    static func secondsNow() -> Int {
        Int(Date().timeIntervalSince1970)
    }

    /// An ended sign-in of a random digest, made a minute ago, whose cookie expires `seconds` from now.
    static func endedSignIn(expiringIn seconds: Int) -> EndedSignIn {
        let digest = (0 ..< 2).map { _ in String(UInt64.random(in: 0 ... .max), radix: 16) }.map { String(repeating: "0", count: 16 - $0.count) + $0 }.joined()
        let now = secondsNow()
        return EndedSignIn(digest: digest, issued: now - 60, expires: now + seconds)
    }

    func checkEndedSignIns() async throws {
        try await withSession { session in
            let store = try await session.open()
            let now = Self.secondsNow()
            let (soon, later, latest) = (Self.endedSignIn(expiringIn: 300), Self.endedSignIn(expiringIn: 3_600), Self.endedSignIn(expiringIn: 86_400))
            for ended in [soon, later, latest, later] {
                try await storeCall { try store.recordEndedSignIn(ended) }
            }
            func ensureKept(_ store: any ListStore, at time: Int, _ expected: Set<EndedSignIn>, _ what: String, line: Int = #line) async throws {
                let kept = try await storeCall { try store.endedSignIns(now: time) }
                // A shared store holds other checks' sign-ins too: only this check's are compared.
                let mine = kept.filter { [soon, later, latest].contains($0) }
                try ensure(mine.count == Set(mine).count, "endedSignIns(now:) \(what) lists one sign-in twice: \(mine)", line: line)
                try ensureEqual(Set(mine), expected, "endedSignIns(now:) \(what)", line: line)
                try ensure(kept.allSatisfy { $0.expires > time }, "endedSignIns(now: \(time)) \(what) holds expired ones: \(kept)", line: line)
            }
            try await ensureKept(store, at: now, [soon, later, latest], "of the store that recorded them")
            try await ensureKept(store, at: now + 600, [later, latest], "ten minutes on (one expired)")
            try await ensureKept(store, at: now + 100_000, [], "once every cookie expired")
            let again = try await session.reopen(store)
            try await ensureKept(again, at: now, [soon, later, latest], "of a store opened anew")
            let fourth = Self.endedSignIn(expiringIn: 600)
            try await storeCall { try again.recordEndedSignIn(fourth) }
            let kept = try await storeCall { try again.endedSignIns(now: now) }
            try ensure(kept.contains(fourth), "endedSignIns(now:) after recording on a store opened anew lacks it: \(kept)")
            for bad in ["", "0123", String(repeating: "A", count: 32), String(repeating: "g", count: 32), String(repeating: "0", count: 31) + " ", soon.digest + "0"] {
                let refused = await storeAttempt { try again.recordEndedSignIn(EndedSignIn(digest: bad, issued: now, expires: now + 60)) }
                try ensure(refused != nil, "an ended sign-in with the digest \(bad.debugDescription) was kept; a digest is 32 lowercase hex digits")
            }
            let backwards = await storeAttempt { try again.recordEndedSignIn(EndedSignIn(digest: soon.digest, issued: now + 10, expires: now)) }
            try ensure(backwards != nil, "an ended sign-in that expires before it was issued was kept")
        }
    }
}

extension ListStoreContract {
    /// One store's ended sign-in reaches another store's `revocations(after:)` as `.signInEnded` (not
    /// the recording store's own) and its `endedSignIns(now:)`; recording it again sends nothing more.
    func checkEndedSignInsShared() async throws {
        try await withSession { session in
            let a = try await openShared(session)
            let b = try await openShared(session)
            let start = try await storeCall { try b.revocations(after: nil) }
            let ended = Self.endedSignIn(expiringIn: 3_600)
            try await storeCall { try a.recordEndedSignIn(ended) }
            try await storeCall { try a.recordEndedSignIn(ended) }
            let read = try await storeCall { try b.revocations(after: start.position) }
            try ensureEqual(read.revocations, [.signInEnded(ended)], "what another store reads after a sign-out recorded twice")
            let own = try await storeCall { try a.revocations(after: start.position) }
            try ensureEqual(own.revocations, [], "what the recording store reads back (its own are left out)")
            let kept = try await storeCall { try b.endedSignIns(now: Self.secondsNow()) }
            try ensure(kept.contains(ended), "another store's endedSignIns(now:) lacks the sign-out: \(kept)")
        }
    }
}
