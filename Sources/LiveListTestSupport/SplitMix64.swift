/// SplitMix64: a 64-bit state advanced by the golden-ratio increment, then mixed. The one seeded
/// generator of the project's tests and benchmarks, so that every random test and scenario replays from
/// its seed (and `Tools/python/livelist_tools/diff_scenarios.py` draws exactly the same numbers). All arithmetic wraps.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The current state; the next call to ``next()`` adds the increment to it first.
    public var state: UInt64

    /// A generator whose state is `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64-bit value. Seed 1 gives `0x910a2dec89025cc1`, then `0xbeeb8da1658eec67`.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `next() % n`: plain modulo, with its slight bias, exactly as the benchmark scenarios define it.
    /// `n` must be positive.
    public mutating func below(_ n: Int) -> Int {
        precondition(n > 0, "below(\(n)): the bound must be positive")
        return Int(next() % UInt64(n))
    }
}
