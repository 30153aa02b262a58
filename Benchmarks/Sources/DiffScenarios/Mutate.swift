public import LiveListTestSupport

/// The `mutate` procedure of `docs/DIFF-SCENARIOS.md`: deletes, updates and relocates randomly chosen elements of
/// `source` and inserts `fresh` ones, all positions drawn from `rng`.
///
/// 1. A partial Fisher–Yates over the positions `0..<n` picks, in this order, `deletes` positions to
///    delete, `updates` to update and `moves` to relocate (for `t` in `0..<(d+u+m)`:
///    `j = t + below(n - t)`, swap `perm[t]` and `perm[j]`).
/// 2. The stay list `L` is the source in source order without the deleted and relocated positions;
///    updated elements are replaced by `update(x)`.
/// 3. The queue `Q` is the relocated elements (unchanged, in the order they were picked), then `fresh`.
/// 4. Each element of `Q`, in order, draws a gap `below(|L| + 1)`.
/// 5. The result lists, for each gap `g` from 0 to `|L|`, the queued elements with gap `g` (in queue
///    order), then `L[g]` if there is one.
///
/// - Returns: The mutated list, of `source.count - deletes + fresh.count` elements.
public func mutate<Element>(
    _ source: [Element],
    deletes: Int,
    updates: Int,
    moves: Int,
    fresh: [Element],
    update: (Element) -> Element,
    using rng: inout SplitMix64
) -> [Element] {
    let n = source.count
    let picked = deletes + updates + moves
    precondition(deletes >= 0 && updates >= 0 && moves >= 0 && picked <= n, "mutate: cannot pick \(picked) of \(n)")

    // 1. Pick the positions.
    var perm = Array(0 ..< n)
    for t in 0 ..< picked {
        let j = t + rng.below(n - t)
        perm.swapAt(t, j)
    }

    var fate = [Fate](repeating: .stays, count: n)
    for position in perm[0 ..< deletes] {
        fate[position] = .deleted
    }
    for position in perm[deletes ..< deletes + updates] {
        fate[position] = .updated
    }
    for position in perm[deletes + updates ..< picked] {
        fate[position] = .relocated
    }

    // 2. The stay list.
    var stay = [Element]()
    stay.reserveCapacity(n - deletes - moves)
    for (position, element) in source.enumerated() {
        switch fate[position] {
        case .stays: stay.append(element)
        case .updated: stay.append(update(element))
        case .deleted, .relocated: break
        }
    }

    // 3. The queue, and 4. its gaps.
    let queue = perm[deletes + updates ..< picked].map { source[$0] } + fresh
    let gaps = queue.map { _ in rng.below(stay.count + 1) }

    // 5. Queued elements by gap, ties in queue order, each gap before the stay element it precedes.
    let order = queue.indices.sorted { (gaps[$0], $0) < (gaps[$1], $1) }
    var result = [Element]()
    result.reserveCapacity(stay.count + queue.count)
    var nextQueued = 0
    for gap in 0 ... stay.count {
        while nextQueued < order.count, gaps[order[nextQueued]] == gap {
            result.append(queue[order[nextQueued]])
            nextQueued += 1
        }
        if gap < stay.count {
            result.append(stay[gap])
        }
    }
    return result
}

/// What ``mutate(_:deletes:updates:moves:fresh:update:using:)`` does with one source position.
private enum Fate {
    case stays, deleted, updated, relocated
}
