import Foundation
import LiveListHTTP
import LiveListHTML
import LiveListTestSupport
import Testing

/// The PUT body of sections of (id, header, cells of (id, text)).
private func body(_ sections: [(id: String, header: String?, cells: [(id: String, text: String)])]) -> String {
    let parts = sections.map { section in
        let cells = section.cells.map { #"{"id":"\#($0.id)","text":"\#($0.text)"}"# }.joined(separator: ",")
        let header = section.header.map { #","header":"\#($0)""# } ?? ""
        return #"{"id":"\#(section.id)"\#(header),"cells":[\#(cells)]}"#
    }
    return #"{"sections":[\#(parts.joined(separator: ","))]}"#
}

@Suite(.serialized) struct CatchUpTests {
    /// Random PUTs to a list of 60 cells in 6 sections (cross-section moves, reorders, re-texts, cells
    /// and sections going and coming back); an SSE stream dropped at random points and resumed with
    /// `Last-Event-ID`; `changes?since=V` for random recent V. While the log holds the version every
    /// catch-up is a diff (never a reset), and applied to the snapshot at V it gives the current one.
    @Test func everyCatchUpIsADiffWhileTheLogHoldsTheVersion() async throws {
        try await offThePool {
            let seed = UInt64(ProcessInfo.processInfo.environment["LIVELIST_CATCHUP_SEED"] ?? "") ?? UInt64.random(in: 0 ..< 1 << 32)
            print("CatchUpTests seed \(seed)")
            var random = SplitMix64(seed: seed)
            let server = try LiveServer(arguments: ["--heartbeat", "0.5"])
            defer { server.stop(); server.removeData() }

            var sections = (0 ..< 6).map { (id: "s\($0)", header: String?.none, cells: [(id: String, text: String)]()) }
            for cell in 0 ..< 60 {
                sections[Int.random(in: 0 ..< 6, using: &random)].cells.append((id: "c\(cell)", text: "t0"))
            }
            var absent: [(id: String, text: String)] = []
            #expect(try Client.put("/lists/g", port: server.port, json: body(sections)).status == 201)
            var models: [Int: ListModel] = [:]
            var current = try snapshot("g", port: server.port)
            models[current.version] = current.model

            var client = current
            var stream = try EventStream(path: "/lists/g/events", port: server.port, headers: [("Last-Event-ID", String(client.version))])
            var counts = (resumes: 0, sinces: 0, events: 0)
            func take(_ changeset: ListChangeset, _ what: String) {
                #expect(!changeset.isReset, "seed \(seed): \(what) from \(client.version) answered a reset")
                #expect(changeset.from == client.version, "seed \(seed): \(what) from \(changeset.from), the client is at \(client.version)")
                do {
                    try client.model.apply(changeset)
                } catch {
                    Issue.record("seed \(seed): \(what) from \(client.version) does not apply: \(error)")
                }
                client.version = changeset.version
                #expect(client.model == models[client.version], "seed \(seed): \(what) to \(client.version) differs from the snapshot")
            }

            for step in 0 ..< 150 {
                // A few random edits, then one PUT.
                for _ in 0 ..< Int.random(in: 1 ... 4, using: &random) {
                    let from = Int.random(in: 0 ..< 6, using: &random)
                    switch Int.random(in: 0 ..< 8, using: &random) {
                    case 0 ... 2 where !sections[from].cells.isEmpty:
                        // A move, often into another section.
                        let cell = sections[from].cells.remove(at: Int.random(in: 0 ..< sections[from].cells.count, using: &random))
                        let to = Int.random(in: 0 ..< 6, using: &random)
                        sections[to].cells.insert(cell, at: Int.random(in: 0 ... sections[to].cells.count, using: &random))
                    case 3 where !sections[from].cells.isEmpty:
                        let index = Int.random(in: 0 ..< sections[from].cells.count, using: &random)
                        sections[from].cells[index].text = "t\(Int.random(in: 0 ..< 5, using: &random))"
                    case 4 where !sections[from].cells.isEmpty:
                        absent.append(sections[from].cells.remove(at: Int.random(in: 0 ..< sections[from].cells.count, using: &random)))
                    case 5 where !absent.isEmpty:
                        let cell = absent.remove(at: Int.random(in: 0 ..< absent.count, using: &random))
                        sections[from].cells.insert(cell, at: Int.random(in: 0 ... sections[from].cells.count, using: &random))
                    case 6:
                        sections[from].header = Bool.random(using: &random) ? "h\(step)" : nil
                    default:
                        sections.swapAt(from, Int.random(in: 0 ..< 6, using: &random))
                    }
                }
                let put = try Client.put("/lists/g", port: server.port, json: body(sections))
                #expect(put.status == 200, "seed \(seed): \(put.text)")
                current = try snapshot("g", port: server.port)
                models[current.version] = current.model

                // Read some of what the stream sends (the server may join several changes into one event).
                while client.version < current.version && Int.random(in: 0 ..< 3, using: &random) > 0 {
                    guard let event = try stream.next(timeout: 5) else { break }
                    take(try decodeChangeset(Array(event.data.utf8)), "an event")
                    counts.events += 1
                }
                // Drop the stream now and then; resume where the client is.
                if Int.random(in: 0 ..< 3, using: &random) == 0 {
                    // (Replacing the stream closes the old one: EventStream closes its socket when it goes.)
                    stream = try EventStream(path: "/lists/g/events", port: server.port, headers: [("Last-Event-ID", String(client.version))])
                    if client.version < current.version {
                        let event = try #require(try stream.next(timeout: 5), "seed \(seed): no catch-up after resuming from \(client.version) (status \(stream.headStatus), server at \(current.version))")
                        take(try decodeChangeset(Array(event.data.utf8)), "a resumed stream")
                        counts.resumes += 1
                    }
                }
                // The changes route from a random recent version.
                let since = Int.random(in: max(1, current.version - 40) ... current.version, using: &random)
                if let model = models[since] {
                    let response = try Client.get("/lists/g/changes?since=\(since)", port: server.port)
                    let changeset = try decodeChangeset(response.body)
                    if since < current.version {
                        #expect(!changeset.isReset, "seed \(seed): changes?since=\(since) answered a reset")
                        counts.sinces += 1
                    }
                    var replayed = model
                    try replayed.apply(changeset)
                    #expect(replayed == current.model && changeset.version == current.version, "seed \(seed): changes?since=\(since)")
                }
            }
            print("CatchUpTests: \(counts.events) events, \(counts.resumes) resumed streams, \(counts.sinces) changes?since, no reset")
            #expect(counts.events > 0 && counts.resumes > 0 && counts.sinces > 0, "seed \(seed): every kind of catch-up was checked: \(counts)")
        }
    }
}
