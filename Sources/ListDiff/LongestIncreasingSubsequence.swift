/// Marks the longest strictly increasing subsequence of `keys` (patience sorting, O(n log n)).
///
/// The elements of a list that keep their place are those on a longest increasing subsequence of their old
/// positions, taken in new order; every other survivor must move, and no smaller set of moves reorders the
/// list. An already increasing sequence, the common case, costs one pass.
///
/// - Parameter keys: Distinct integers (old positions), in new order.
/// - Returns: For each position of `keys`, whether it lies on the chosen subsequence.
@inlinable
func longestIncreasingSubsequence(_ keys: UnsafeBufferPointer<Int>) -> [Bool] {
    let count = keys.count
    var isIncreasing = true
    var index = 1
    while index < count {
        if keys[index &- 1] >= keys[index] {
            isIncreasing = false
            break
        }
        index &+= 1
    }
    if isIncreasing {
        return Array(repeating: true, count: count)
    }

    // tails[k]: position of the smallest possible tail of an increasing run of length k + 1.
    var tails = [Int]()
    tails.reserveCapacity(64)
    var previous = [Int](repeating: -1, count: count)
    previous.withUnsafeMutableBufferPointer { previous in
        for position in 0 ..< count {
            let key = keys[position]
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low &+ high) &>> 1
                if keys[tails[middle]] < key {
                    low = middle &+ 1
                } else {
                    high = middle
                }
            }
            if low > 0 {
                previous[position] = tails[low &- 1]
            }
            if low == tails.count {
                tails.append(position)
            } else {
                tails[low] = position
            }
        }
    }

    var onSubsequence = [Bool](repeating: false, count: count)
    var position = tails.last ?? -1
    while position >= 0 {
        onSubsequence[position] = true
        position = previous[position]
    }
    return onSubsequence
}
