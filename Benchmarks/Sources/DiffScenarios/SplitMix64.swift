public import LiveListTestSupport

/// Shuffles `array[range]` in place with Fisher–Yates as `docs/DIFF-SCENARIOS.md` defines it: for each local
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
