import Foundation
@testable import LiveListHTTP
import LiveListServer
import LiveListTestSupport
import Testing

/// A node whose streams together hold more than its stream output budget: the node is overloaded, not
/// any one reader. Its streams are skipped while they hold their share, then caught up with one
/// changeset each, never closed for it.
@Suite struct OverloadTests {
    @Test func streamsPastTheNodesBudgetAreCaughtUpNotClosed() async throws {
        let client = try await RouteClient()
        var http = client.app.httpConfiguration
        http.port = 0
        http.loopCount = 1
        http.streamOutputBudget = 48 << 10
        let server = HTTPServer(configuration: http, handler: client.handler)
        try server.start()
        let text = String(repeating: "x", count: 32 << 10)
        try await client.put("big", ["start"])
        // Three readers that read nothing while the list changes: their sockets fill, then what is
        // written to them waits in the server, past the budget.
        var readers: [RawHTTPConnection] = []
        for _ in 0 ..< 3 {
            let reader = try #require(RawHTTPConnection(port: server.port))
            let head = await onThread { () -> Int? in
                reader.shrinkReceiveBuffer()
                reader.send("GET /lists/big/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
                return reader.readResponse(head: true)?.status
            }
            #expect(head == 200)
            readers.append(reader)
        }
        let changes = 60
        for index in 1 ... changes {
            let answer = try await client.put("/lists/big", json: #"{"sections":[{"id":"s","cells":[{"id":"a","text":"start"},"#
                + #"{"id":"b","text":"\#(index) \#(text)"}]}]}"#)
            #expect(answer.status == 200)
        }
        let last = changes + 1
        // Now they read, together: each reaches the last version, with no gap (each event goes from
        // the one before), and its stream stays open.
        let texts = await withTaskGroup(of: (Int, String?).self) { group in
            for (index, reader) in readers.enumerated() {
                group.addTask { (index, await onThread { reader.readStream { $0.hasSuffix("\n\n") && $0.contains("id: \(last)\n") } }) }
            }
            var texts: [Int: String?] = [:]
            for await (index, text) in group { texts[index] = text }
            return texts
        }
        for index in readers.indices {
            let received = texts[index] ?? nil
            #expect(received != nil, "reader \(index) reached version \(last)")
            var previous: Int?
            for event in (received ?? "").components(separatedBy: "\n\n") where event.contains("\nid: ") || event.hasPrefix("id: ") {
                guard let id = event.firstMatch(of: /id: (\d+)\n/).map({ Int($0.1)! }),
                      let from = event.firstMatch(of: /"from":(\d+)/).map({ Int($0.1)! }) else { continue }
                if let previous { #expect(from == previous, "reader \(index): an event from \(from) after \(previous)") }
                previous = id
            }
        }
        let statistics = server.statistics
        #expect(statistics.streamsClosed.isEmpty, "closed: \(statistics.streamsClosed)")
        #expect(statistics.streamsOpen == 3)
        #expect(statistics.streamWritesDeferred > 0, "the budget was reached")
        await server.shutdown(gracePeriod: .milliseconds(200))
        withExtendedLifetime(readers) {}
    }
}

/// Runs blocking client code on a thread of its own, off the cooperative pool.
private func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}
