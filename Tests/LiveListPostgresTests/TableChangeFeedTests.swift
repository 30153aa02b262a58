import LiveListEngine
@testable import LiveListPostgres
import Testing

/// The streams of `tableChanges()` without a database: in order, each its own, bounded.
@Suite struct TableChangeFeedTests {
    private func change(_ value: Int) -> TableChange {
        TableChange(table: "orders", values: ["customer": ["c\(value)"]])
    }

    /// The first `count` elements of `stream`.
    private func first(_ count: Int, of stream: AsyncStream<TableChange>) async -> [TableChange] {
        var found: [TableChange] = []
        for await change in stream {
            found.append(change)
            if found.count == count { break }
        }
        return found
    }

    @Test func everyStreamGetsEveryChangeInOrder() async {
        let feed = TableChangeFeed()
        let streams = [feed.subscribe(), feed.subscribe()]
        for value in 0 ..< 5 { feed.post(change(value)) }
        for stream in streams {
            #expect(await first(5, of: stream) == (0 ..< 5).map(change))
        }
    }

    @Test func aReaderFarBehindGetsEverythingInsteadOfAnUnboundedQueue() async {
        let feed = TableChangeFeed()
        let stream = feed.subscribe()
        for value in 0 ..< TableChangeFeed.maximumPending + 10 { feed.post(change(value)) }
        // Past the bound, what was pending is dropped for one `.everything`, which covers what follows
        // until it is read.
        feed.post(change(-1))
        #expect(await first(1, of: stream) == [.everything])
        feed.post(change(1))
        #expect(await first(1, of: stream) == [change(1)])
    }

    @Test func aReconnectionReplacesWhatIsPendingWithEverything() async {
        let feed = TableChangeFeed()
        let stream = feed.subscribe()
        feed.post(change(1))
        feed.post(.everything)
        feed.post(change(2))
        feed.post(.everything)
        #expect(await first(1, of: stream) == [.everything])
        feed.post(change(3))
        #expect(await first(1, of: stream) == [change(3)])
    }

    @Test func aDroppedOrCancelledStreamIsForgottenAndFinishEndsTheRest() async {
        let feed = TableChangeFeed()
        do {
            _ = feed.subscribe()
        }
        #expect(feed.subscriberCount == 0, "a stream nobody holds is forgotten")
        let cancelled = feed.subscribe()
        let reader = Task { await first(1, of: cancelled) }
        _ = await Postgres.eventually(within: .seconds(5)) { feed.subscriberCount == 1 }
        reader.cancel()
        #expect(await reader.value.isEmpty)
        #expect(feed.subscriberCount == 0)
        let open = feed.subscribe()
        let waiting = Task { await first(1, of: open) }
        feed.finish()
        #expect(await waiting.value.isEmpty)
        #expect(await first(1, of: feed.subscribe()).isEmpty, "a stream after finish ends at once")
    }
}
