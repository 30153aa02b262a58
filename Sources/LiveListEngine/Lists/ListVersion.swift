import Synchronization

/// The versions of lists: integers that only grow and are never reused (docs/PROTOCOL.md, "Versions").
public enum ListVersion {
    /// The largest version a list may reach: 2^53 − 1, the largest integer a JavaScript client holds
    /// exactly. A write that would need a larger version is refused (`version_exhausted`).
    public static let maximum = 9_007_199_254_740_991

    /// A version as text (a query, a header, a stored file): a non-negative decimal integer, ASCII digits
    /// only (no sign, no spaces), at most 18 of them so that it fits; nil for anything else.
    package static func parse(_ text: some StringProtocol) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ (0x30 ... 0x39).contains($0) }) else {
            return nil
        }
        return Int(text)
    }
}

/// What a write expects of the list's current state, checked inside the list's ordered write path, so
/// that no other write can come between the check and the write.
public enum WritePrecondition: Sendable, Equatable {
    /// Nothing: create or replace.
    case none
    /// `If-Match: "V"`: the list exists at exactly this version.
    case version(Int)
    /// `If-Match: *`: the list exists, at any version.
    case exists
    /// `If-None-Match: *`: the list does not exist (the write creates it).
    case absent
}

/// The count of JSON-driven lists against their limit, shared by every list's write path: a creation
/// takes a place before it writes anything and gives it back if it fails, so the limit holds under any
/// interleaving of creates and deletes.
final class ListQuota: Sendable {
    let limit: Int
    private let count: Atomic<Int>

    init(limit: Int, count: Int) {
        self.limit = limit
        self.count = Atomic(count)
    }

    /// Takes a place; false when the limit is reached.
    func take() -> Bool {
        var current = count.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = count.compareExchange(expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives a place back (a list was deleted, or its creation failed).
    func giveBack() {
        count.subtract(1, ordering: .acquiringAndReleasing)
    }
}
