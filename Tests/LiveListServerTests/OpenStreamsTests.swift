import Foundation
import LiveListEngine
import LiveListTestSupport
import Synchronization
import Testing
@testable import LiveListHTTP
@testable import LiveListServer

/// The record of each open event stream (`OpenStreams`): the lists it is still granted, and what its
/// end undoes (the record, the list's subscription, the count of open streams).
@Suite struct OpenStreamsTests {
    /// The granted lists behave as an ordered array of them, whatever the operations (seed printed).
    @Test func grantedListsBehaveAsAnArray() {
        let seed = UInt64.random(in: 1 ... 1_000_000)
        print("grantedListsBehaveAsAnArray seed \(seed)")
        var generator = SplitMix64(seed: seed)
        let pool = (0 ..< 6).map { ListName("l\($0)")! }
        for _ in 0 ..< 200 {
            let start = Array(pool.prefix(Int(generator.next() % 4)))
            var granted = GrantedLists(start)
            var model = start
            for _ in 0 ..< 12 {
                let name = pool[Int(generator.next() % UInt64(pool.count))]
                switch generator.next() % 3 {
                case 0:
                    granted.append(contentsOf: [name])
                    model.append(name)
                case 1:
                    granted.removeAll { $0 == name }
                    model.removeAll { $0 == name }
                default:
                    let dropped = Set(pool.filter { _ in generator.next() % 2 == 0 })
                    granted.removeAll(where: dropped.contains)
                    model.removeAll(where: dropped.contains)
                }
                #expect(granted.all == model, "seed \(seed)")
                for candidate in pool { #expect(granted.contains(candidate) == model.contains(candidate), "seed \(seed)") }
                #expect(granted.containsAny(of: [name, pool[0]]) == model.contains { $0 == name || $0 == pool[0] }, "seed \(seed)")
            }
        }
    }

    /// Over sockets: a list's own stream and a multiplexed one are recorded while open, and when their
    /// clients go away, each leaves the record, its list's viewers and the count of open streams.
    @Test func aClosedStreamLeavesEverythingItJoined() async throws {
        let server = try await RouteClient { $0.port = 0 }
        let app = server.app
        _ = try await app.host("solo", state: ["x"]) { items in Section(id: "s", cells: items.map { CellNode(TextCell(id: $0, text: $0)) }) }
        let port = Mutex(0)
        let running = Task { try await app.run { serving in port.withLock { $0 = serving } } }
        defer { running.cancel() }
        while port.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        let serving = port.withLock { $0 }
        let list = try #require(await app.registry.list(ListName("solo")!))
        do {
            let single = try #require(RawHTTPConnection(port: serving))
            let multiplexed = try #require(RawHTTPConnection(port: serving))
            #expect(single.send("GET /lists/solo/events HTTP/1.1\r\nHost: localhost\r\n\r\n"))
            #expect(multiplexed.send("GET /events?list=solo HTTP/1.1\r\nHost: localhost\r\n\r\n"))
            let heads = await onThread { (single.readResponse(head: true)?.status, multiplexed.readResponse(head: true)?.status) }
            #expect(heads.0 == 200 && heads.1 == 200)
            #expect(await eventually { await list.viewerCount == 2 })
            #expect(app.services.openStreams.count == 2)
            #expect(app.services.metrics.snapshot.streams == 2)
            #expect(app.services.openStreams.entry(token: "nothing") == nil)
            #expect(app.services.openStreams.select { $0.control != nil }.count == 1)
        }
        // Both clients are gone: each stream ends and undoes what it joined.
        #expect(await eventually { await list.viewerCount == 0 })
        #expect(await eventually { app.services.openStreams.count == 0 && app.services.metrics.snapshot.streams == 0 })
        await app.stop()
    }

    private func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }

    private func eventually(_ condition: () async -> Bool) async -> Bool {
        for _ in 0 ..< 500 {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}
