import Testing
@testable import LiveListHTTP

/// When a full node leaves new connections in the backlog rather than accept and refuse them.
struct SlotWaitTests {
    private static let millisecond: UInt64 = 1_000_000
    private static let start = 1_000 * millisecond

    /// Whether each of `asks` (a slot free, slots given back so far, milliseconds after `start`) waits,
    /// asked in turn of one `SlotWait`.
    private func answers(_ asks: [(free: Bool, released: Int, at: UInt64)]) -> [Bool] {
        var wait = SlotWait()
        return asks.map { wait.waits(free: $0.free, released: $0.released, now: Self.start + $0.at * Self.millisecond) }
    }

    @Test func aFreeSlotNeverWaits() {
        #expect(answers([(true, 0, 0), (true, 5, 10_000)]) == [false, false])
    }

    /// Full and giving nothing back (connections that send nothing hold every slot): wait half a second
    /// from the first full moment, then accept and refuse.
    @Test func aNodeThatGivesNothingBackWaitsHalfASecond() {
        #expect(answers([(false, 7, 0), (false, 7, 499), (false, 7, 500), (false, 7, 900)]) == [true, true, false, false])
    }

    /// Full for seconds while its slots turn over (a crowd whose streams are refused from their heads,
    /// on this loop or another): keep waiting, since each slot given back lets one more in; then nothing
    /// more given back for half a second: refused.
    @Test func aNodeWhoseSlotsTurnOverKeepsWaiting() {
        let turning = (0 ..< 40).map { step in (free: false, released: step / 3, at: UInt64(step) * 100) }
        let answered = answers(turning + [(false, 13, 4_500)])
        #expect(answered == Array(repeating: true, count: 40) + [false])
    }

    /// A slot free again ends the full period: the next one starts its half second afresh.
    @Test func aFreeSlotStartsTheNextFullPeriodAfresh() {
        let answered = answers([(false, 1, 0), (true, 1, 400), (false, 1, 800), (false, 1, 1_200), (false, 1, 1_300)])
        #expect(answered == [true, false, true, true, false])
    }
}
