/// The SplitMix64 generator of `DIFF-BENCH.md`: a 64-bit state advanced by a constant, then mixed.
///
/// Every random choice in the scenarios comes from one of these, so that a second implementation
/// (`Scripts/diff_scenarios.py`) draws exactly the same numbers. All arithmetic wraps at 64 bits.
public struct SplitMix64: Sendable {
    /// The current state; the next call to ``next()`` adds the golden-ratio increment to it first.
    public private(set) var state: UInt64

    /// Creates a generator whose state is `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// Returns the next 64-bit value. Seed 1 gives `0x910a2dec89025cc1`, then `0xbeeb8da1658eec67`.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Returns `next() % n`: plain modulo, with its slight bias, exactly as the scenarios define it.
    ///
    /// - Parameter n: The exclusive upper bound; must be positive.
    public mutating func below(_ n: Int) -> Int {
        precondition(n > 0, "below(\(n)): the bound must be positive")
        return Int(next() % UInt64(n))
    }
}

/// Shuffles `array[range]` in place with Fisher–Yates as `DIFF-BENCH.md` defines it: for each local
/// index `i` from `range.count - 1` down to 1, draw `j = rng.below(i + 1)` and swap the elements at
/// `range.lowerBound + i` and `range.lowerBound + j`.
public func fisherYatesShuffle<Element>(
    _ array: inout [Element],
    range: Range<Int>,
    using rng: inout SplitMix64
) {
    guard range.count > 1 else { return }
    for i in stride(from: range.count - 1, through: 1, by: -1) {
        let j = rng.below(i + 1)
        array.swapAt(range.lowerBound + i, range.lowerBound + j)
    }
}
