#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import LiveListHTTP
import LiveListTestSupport

/// The seed: `POLLER_TEST_SEED` when set (to replay a failure), else a fresh one; printed either way.
private func testSeed(_ name: String) -> UInt64 {
    let seed = getenv("POLLER_TEST_SEED").flatMap { UInt64(String(cString: $0)) } ?? UInt64.random(in: 1...UInt64.max)
    print("\(name): seed \(seed) (replay with POLLER_TEST_SEED=\(seed))")
    return seed
}

/// A pipe whose reading end a poller watches.
private struct WatchedPipe {
    let readFd: Int32
    let writeFd: Int32
    var token: UInt64
    var registered = false
    var readable = false

    init?(token: UInt64) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        readFd = ends[0]
        writeFd = ends[1]
        self.token = token
    }

    mutating func fill() {
        var byte: UInt8 = 1
        _ = write(writeFd, &byte, 1)
        readable = true
    }

    mutating func empty() {
        var byte: UInt8 = 0
        _ = read(readFd, &byte, 1)
        readable = false
    }
}

/// The tokens of the events `poller` reports now (a wait of 0 ms), in a set.
private func readyTokens(_ poller: PollPoller) -> [UInt64: IOEvents] {
    var ready: [UInt64: IOEvents] = [:]
    let count = poller.wait(timeoutMilliseconds: 0)
    for index in 0..<count { ready[poller.token(at: index)] = poller.events(at: index) }
    return ready
}

@Suite struct PollPollerTests {
    /// Many descriptors registered, made ready, changed and removed in a random order: after every
    /// step the fd-to-slot map agrees with the pollfd array, and a wait reports exactly the
    /// registered, interested, readable descriptors with their own tokens.
    @Test func bookkeepingSurvivesRandomRegistrationAndRemoval() throws {
        var random = SplitMix64(seed: testSeed("bookkeepingSurvivesRandomRegistrationAndRemoval"))
        let poller = try PollPoller()
        var pipes: [WatchedPipe] = []
        defer {
            for pipe in pipes {
                close(pipe.readFd)
                close(pipe.writeFd)
            }
        }
        for index in 0..<300 {
            guard let pipe = WatchedPipe(token: UInt64(index) << 32 | 7) else { break }
            pipes.append(pipe)
        }
        try #require(pipes.count >= 100, "could not open enough pipes")
        // The wake channel is registered from the start.
        #expect(poller.count == 1)
        var interested = Set<Int>()
        var nextToken: UInt64 = 1 << 40

        for round in 0..<40 {
            // Register some of the unregistered pipes (with fresh tokens, as a reused descriptor gets).
            for index in pipes.indices.shuffled(using: &random) where !pipes[index].registered && Bool.random(using: &random) {
                nextToken += 1
                pipes[index].token = nextToken
                #expect(poller.register(pipes[index].readFd, interest: .readable, token: nextToken))
                pipes[index].registered = true
                interested.insert(index)
            }
            // Registering twice is refused and changes nothing.
            if let twice = pipes.indices.first(where: { pipes[$0].registered }) {
                #expect(!poller.register(pipes[twice].readFd, interest: .readable, token: 1))
            }
            // Remove a random part of the registered ones, in random order.
            for index in pipes.indices.shuffled(using: &random) where pipes[index].registered && random.next() % 3 == 0 {
                poller.unregister(pipes[index].readFd)
                pipes[index].registered = false
                interested.remove(index)
                #expect(poller.bookkeepingIsConsistent(), "round \(round): map and entries disagree after removing fd \(pipes[index].readFd)")
            }
            // Mute some, unmute others.
            for index in pipes.indices where pipes[index].registered && random.next() % 5 == 0 {
                if interested.contains(index) {
                    poller.modify(pipes[index].readFd, interest: [], token: pipes[index].token)
                    interested.remove(index)
                } else {
                    poller.modify(pipes[index].readFd, interest: .readable, token: pipes[index].token)
                    interested.insert(index)
                }
            }
            // Make a random set readable (and the rest not).
            for index in pipes.indices {
                let wanted = random.next() % 4 == 0
                if wanted && !pipes[index].readable { pipes[index].fill() }
                if !wanted && pipes[index].readable { pipes[index].empty() }
            }

            #expect(poller.bookkeepingIsConsistent(), "round \(round)")
            let registered = pipes.filter(\.registered)
            #expect(poller.count == registered.count + 1, "round \(round)")
            for pipe in registered {
                #expect(poller.registration(of: pipe.readFd)?.token == pipe.token, "round \(round): token of fd \(pipe.readFd)")
            }
            let expected = Dictionary(uniqueKeysWithValues: interested.filter { pipes[$0].readable }.map { (pipes[$0].token, IOEvents.readable) })
            let reported = readyTokens(poller)
            #expect(reported == expected, "round \(round): \(reported.count) reported, \(expected.count) expected")
        }
        // Remove everything: only the wake channel is left.
        for index in pipes.indices.shuffled(using: &random) where pipes[index].registered {
            poller.unregister(pipes[index].readFd)
            pipes[index].registered = false
        }
        #expect(poller.count == 1)
        #expect(poller.bookkeepingIsConsistent())
        // Unknown descriptors are ignored.
        poller.unregister(pipes[0].readFd)
        poller.modify(-1, interest: .readable, token: 0)
        poller.forgetClosed(100_000)
        #expect(poller.count == 1)
    }

    @Test func wakeFromAnotherThreadEndsAWait() async throws {
        let poller = try PollPoller()
        let box = UncheckedBox(poller)
        // The wait blocks a thread of its own (never one of the cooperative pool's few).
        async let woken = onThread { () -> Bool in
            for _ in 0..<200 {
                let count = box.value.wait(timeoutMilliseconds: 50)
                for index in 0..<count where box.value.token(at: index) == PollPoller.wakeToken { return true }
            }
            return false
        }
        try await Task.sleep(for: .milliseconds(20))
        poller.wake()
        poller.wake()
        #expect(await woken)
        poller.drainWake()
        #expect(readyTokens(poller).isEmpty, "the wake-ups were drained")
    }

    /// `peerClosed` asked for alone: reported when the peer ends, both with POLLRDHUP (Linux) and
    /// with the peek that stands in for it elsewhere (forced here, so that Linux checks that path).
    @Test(arguments: [false, true]) func peerClosedIsReportedAndDataDoesNotSpin(emulating: Bool) throws {
        // Without POLLRDHUP (Darwin) only the emulated path exists.
        if !emulating && !PollPoller.systemHasPeerClosed { return }
        let poller = try PollPoller(emulatingPeerClosed: emulating)
        var ends: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, streamSocketType, 0, &ends) == 0)
        defer { close(ends[0]) }
        let (mine, peer) = (ends[0], ends[1])
        #expect(poller.register(mine, interest: .peerClosed, token: 42))
        #expect(readyTokens(poller).isEmpty)

        // Data the loop does not want now: nothing is reported, now or on the next wait.
        var byte: UInt8 = 1
        #expect(write(peer, &byte, 1) == 1)
        #expect(readyTokens(poller).isEmpty)
        #expect(readyTokens(poller).isEmpty)

        // Read the data (as a loop back to reading would), ask again, and let the peer go.
        #expect(read(mine, &byte, 1) == 1)
        poller.modify(mine, interest: .peerClosed, token: 42)
        close(peer)
        let events = readyTokens(poller)
        #expect(events[42]?.contains(.peerClosed) == true, "reported: \(events)")
        #expect(events[42]?.contains(.readable) != true, "input was not asked for")
    }

    @Test func theBackendIsChosenFromTheConfigurationThenTheEnvironment() throws {
        #expect(try EventLoopBackend.automatic.resolved(environmentValue: nil) == EventLoopBackend.platformDefault)
        #expect(try EventLoopBackend.automatic.resolved(environmentValue: "") == EventLoopBackend.platformDefault)
        #expect(try EventLoopBackend.automatic.resolved(environmentValue: "poll") == .poll)
        #expect(try EventLoopBackend.poll.resolved(environmentValue: "epoll") == .poll, "an explicit choice wins")
        for bad in ["kqueue", "POLL", "automatic", " poll"] {
            #expect(throws: HTTPServerError.self, "\(bad)") { try EventLoopBackend.automatic.resolved(environmentValue: bad) }
        }
        do {
            _ = try EventLoopBackend.automatic.resolved(environmentValue: "kqueue")
        } catch {
            guard case .eventLoop(let reason) = error else { Issue.record("wrong error \(error)"); return }
            #expect(reason.contains("LIVELIST_EVENT_LOOP=kqueue"))
        }
        for backend in EventLoopBackend.available {
            #expect(try backend.resolved(environmentValue: nil) == backend)
        }
    }

    @Test(arguments: EventLoopBackend.available) func aStartedServerReportsItsBackend(backend: EventLoopBackend) async throws {
        try await withServer(testConfiguration(loops: 1, backend: backend), handler: .sync { _ in .text("ok") }) { server in
            #expect(server.eventLoopBackend == backend)
            let port = server.port
            let status = await onThread { () -> Int in
                guard let client = TestClient(port: port) else { return 0 }
                client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                return client.readResponse()?.status ?? 0
            }
            #expect(status == 200)
        }
    }
}

private final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
