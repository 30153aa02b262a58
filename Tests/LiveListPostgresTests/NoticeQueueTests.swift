import LiveListEngine
@testable import LiveListPostgres
import Testing

/// Notices are hints that any database role may send: a flood of them, however many names it makes
/// up, holds bounded memory and turns into one catch-up of every list.
@Suite struct NoticeQueueTests {
    @Test func aFloodOfMadeUpNamesBecomesOneCatchUp() async {
        let queue = NoticeQueue()
        for index in 0 ..< 100_000 {
            queue.post(.changed(name: "made-up-\(index)", version: 1))
            #expect(queue.pendingCount <= NoticeQueue.maximumPending)
        }
        #expect(await queue.next() == .reconnected)
        #expect(queue.pendingCount == 0)
        // What comes after is queued again, one by one.
        queue.post(.changed(name: "real", version: 3))
        queue.post(.changed(name: "real", version: 5))
        #expect(await queue.next() == .changed(name: "real", version: 5))
    }

    @Test func noticesOfOneListCoalesceToItsHighestVersion() async {
        let queue = NoticeQueue()
        for version in 1 ... 1_000 {
            queue.post(.changed(name: "busy", version: version))
        }
        queue.post(.changed(name: "other", version: 2))
        #expect(queue.pendingCount == 2)
        #expect(await queue.next() == .changed(name: "busy", version: 1_000))
        #expect(await queue.next() == .changed(name: "other", version: 2))
    }
}
