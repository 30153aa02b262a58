import Foundation
@testable import LiveListEngine
import LiveListTestSupport
import Testing

/// A sink that takes its time to queue the events of one list (a busy stream lock, a loaded machine):
/// time in which another list's event, written from another thread, could be queued first.
private final class SlowForOneList: EventSink {
    let recording = RecordingSink()
    let slowList: String

    init(slowList: String) {
        self.slowList = slowList
    }

    func send(_ event: ListEvent) -> Bool {
        if String(decoding: event.data, as: UTF8.self).contains(#""list":"\#(slowList)""#) {
            usleep(300)
        }
        return recording.send(event)
    }

    var queuedBytes: Int { recording.queuedBytes }
    var isClosed: Bool { recording.isClosed }
    func whenDrained(_ body: @escaping @Sendable () -> Void) { recording.whenDrained(body) }
    func close() { recording.close() }
}

/// A multiplexed stream's ids are version vectors that a client sends back to resume
/// (docs/PROTOCOL.md, "Ids and resuming"): no event may carry a vector that claims a version of a
/// list whose changeset the stream has not queued before it, or a client that leaves right after that
/// event resumes past a change it never got.
@Suite struct MultiplexedVectorTests {
    @Test func noVectorClaimsAChangeQueuedAfterIt() async throws {
        let registry = try await ListRegistry(store: MemoryListStore())
        for name in ["a", "b"] {
            _ = try await registry.put(listName(name), body: jsonBody(["x"]), ifMatch: nil)
        }
        let sink = SlowForOneList(slowList: "a")
        let stream = MultiplexedStream(sink: sink, names: ["a", "b"], versions: ["a": 1, "b": 1])
        await registry.subscribe(stream, names: [listName("a"), listName("b")], since: ["a": 1, "b": 1])
        // The two lists' actors run on lanes of their own: their writes, and their events, at once.
        let rounds = 60
        await withTaskGroup(of: Void.self) { group in
            for name in ["a", "b"] {
                group.addTask {
                    for round in 0 ..< rounds {
                        _ = try? await registry.put(listName(name), body: jsonBody(["x", "\(name)\(round)"]), ifMatch: nil)
                    }
                }
            }
        }
        // In the order the stream queued them: what each list's changesets have reached so far, and
        // what each event's vector claims.
        var reached = ["a": 1, "b": 1]
        var overclaims: [String] = []
        for event in sink.recording.events {
            let changeset = try #require(try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])
            let list = try #require(changeset["list"] as? String)
            reached[list] = try #require(changeset["version"] as? Int)
            for item in event.id.split(separator: ",") {
                let parts = item.split(separator: ":")
                let (name, claimed) = (String(parts[0]), Int(parts[1]) ?? -1)
                if claimed > reached[name, default: 0] {
                    overclaims.append("\(event.id) before \(name)'s changeset to \(claimed)")
                }
            }
        }
        #expect(reached == ["a": rounds + 1, "b": rounds + 1], "every change reached the stream")
        #expect(overclaims.isEmpty, "\(overclaims.count) vectors claimed what was not queued yet: \(overclaims.prefix(5))")
    }
}
