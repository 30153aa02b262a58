@testable import LiveListServer
import Testing

/// The pace of actions (hostile input, round two: 2,000 anonymous toggles made 2,000 versions) and
/// the loopback trust's names (DNS rebinding).
@Suite struct ActionPaceTests {
    @Test func aBurstThenTheRate() {
        let pacer = ActionPacer(pace: ActionPace(rate: 5, burst: 10))
        let start = ContinuousClock.now
        var taken = 0
        var waits: Set<Int> = []
        for _ in 0 ..< 100 {
            if let wait = pacer.take(["s:a"], now: start) { waits.insert(wait) } else { taken += 1 }
        }
        #expect(taken == 10, "a burst of 10 at once")
        #expect(waits == [1], "Retry-After in whole seconds, at least 1")
        // Two seconds later, 10 more have refilled (5 a second), and no more.
        taken = 0
        for _ in 0 ..< 100 where pacer.take(["s:a"], now: start + .seconds(2)) == nil { taken += 1 }
        #expect(taken == 10)
        // Over any stretch: at most burst + rate × duration.
        taken = 0
        for step in 0 ..< 1_000 where pacer.take(["s:b"], now: start + .milliseconds(step * 10)) == nil { taken += 1 }
        #expect(taken <= 10 + 5 * 10 + 1 && taken >= 5 * 10)
    }

    @Test func everyKeyMustHaveRoomAndARefusalTakesNothing() {
        let pacer = ActionPacer(pace: ActionPace(rate: 1, burst: 2))
        let now = ContinuousClock.now
        #expect(pacer.take(["s:1", "a:x"], now: now) == nil)
        #expect(pacer.take(["s:2", "a:x"], now: now) == nil)
        // The address is spent: a new session from it is refused, and its own bucket stays full.
        #expect(pacer.take(["s:3", "a:x"], now: now) != nil)
        #expect(pacer.take(["s:3", "a:y"], now: now) == nil && pacer.take(["s:3", "a:z"], now: now) == nil)
        #expect(pacer.take(["s:3", "a:w"], now: now) != nil)
    }

    @Test func itsMemoryIsBoundedWhateverTheKeys() {
        let pacer = ActionPacer(pace: ActionPace(rate: 1, burst: 1), capacity: 1_000)
        let now = ContinuousClock.now
        for index in 0 ..< 20_000 {
            _ = pacer.take(["s:\(index)"], now: now)
        }
        #expect(pacer.count <= 1_000)
    }

    @Test func thePaceComesFromTheEnvironmentOrItsDefault() throws {
        #expect(try ServerConfiguration.fromEnvironment([:]).actionPace == .standard)
        #expect(try ServerConfiguration.fromEnvironment(["LIVELIST_ACTION_RATE": "0"]).actionPace == nil)
        #expect(try ServerConfiguration.fromEnvironment(["LIVELIST_ACTION_RATE": "2.5", "LIVELIST_ACTION_BURST": "7"]).actionPace == ActionPace(rate: 2.5, burst: 7))
        #expect(throws: StartupError.self) { try ServerConfiguration.fromEnvironment(["LIVELIST_ACTION_RATE": "fast"]) }
        #expect(throws: StartupError.self) { try ServerConfiguration.fromEnvironment(["LIVELIST_ACTION_BURST": "0"]) }
    }

    @Test func theLoopbackTrustWantsALoopbackNameAndTheServersOwnOrigin() {
        for host in ["127.0.0.1:8080", "127.0.0.1", "localhost:8080", "LOCALHOST:8080", "[::1]:8080", "[::1]", "127.1.2.3:8080"] {
            #expect(LoopbackNames.problem(host: host, origin: nil, port: 8080) == nil, "\(host)")
        }
        for host in ["attacker.example:8080", "attacker.example", "127.0.0.1:9090", "localhost.attacker.example:8080", "127.0.0.1.nip.io:8080",
                     "[::2]:8080", "127.0.0.256:8080", "127.0.0:8080", "", "127.0.0.1:08080x"] {
            #expect(LoopbackNames.problem(host: host, origin: nil, port: 8080) != nil, "\(host)")
        }
        #expect(LoopbackNames.problem(host: "127.0.0.1:8080", origin: "http://127.0.0.1:8080", port: 8080) == nil)
        #expect(LoopbackNames.problem(host: "localhost:8080", origin: "https://localhost:8080", port: 8080) == nil)
        for origin in ["http://attacker.example:8080", "null", "http://127.0.0.1:9999", "file://", "http://localhost:8080.attacker.example"] {
            #expect(LoopbackNames.problem(host: "127.0.0.1:8080", origin: origin, port: 8080)?.contains("Origin") == true, "\(origin)")
        }
        // A server that does not know its port (in-process tests) takes any port, never any name.
        #expect(LoopbackNames.problem(host: "127.0.0.1:1234", origin: nil, port: 0) == nil)
        #expect(LoopbackNames.problem(host: "attacker.example:1234", origin: nil, port: 0) != nil)
    }
}
