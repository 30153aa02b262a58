/// A write's `Idempotency-Key`: the key the client chose, and a fingerprint of the request it came
/// with (method, preconditions and body), so that the key used again with another request is told
/// apart from a retry.
public struct IdempotencyKey: Sendable, Hashable {
    /// The client's key: 1 to 255 visible ASCII characters.
    public var key: String
    /// A digest of the request.
    public var fingerprint: [UInt8]

    public init(key: String, fingerprint: [UInt8]) {
        self.key = key
        self.fingerprint = fingerprint
    }

    /// Whether `text` may be a key: 1 to 255 characters from `!` to `~`.
    public static func isValid(_ text: String) -> Bool {
        (1 ... 255).contains(text.utf8.count) && text.utf8.allSatisfy { (0x21 ... 0x7E).contains($0) }
    }
}

/// What a write with an idempotency key made, kept so that a retry with the key gets the same answer.
public struct IdempotentWrite: Sendable, Equatable {
    /// The key and the request it came with.
    public var key: IdempotencyKey
    /// The list's version that the write made.
    public var version: Int
    /// Whether the write created the list.
    public var created: Bool

    public init(key: IdempotencyKey, version: Int, created: Bool) {
        self.key = key
        self.version = version
        self.created = created
    }
}

/// The values of the most recent ``capacity`` keys, the oldest forgotten first: what a process
/// remembers of recent idempotency keys (a list's writes, the registry's deletions, a node's actions).
/// Its memory is bounded by ``capacity`` whatever the calls: a key forgotten leaves a stale place in
/// the order, and the order is compacted (live places kept, in order) once its stale places outnumber
/// ``capacity``, so that each call costs amortised O(1).
package struct RecentlyKept<Value> {
    package let capacity: Int
    /// Each value with the stamp of its key's place in `order`.
    private var values: [String: (value: Value, stamp: Int)] = [:]
    /// Places from `head` on, oldest first; a place whose key was forgotten or kept again since is stale.
    private var order: [(key: String, stamp: Int)] = []
    private var head = 0
    private var stamps = 0

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    package subscript(key: String) -> Value? {
        values[key]?.value
    }

    /// The keys kept now.
    package var count: Int { values.count }

    /// The places the order holds, stale ones included (at most `2 × capacity + 1`).
    package var placesHeld: Int { order.count - head }

    /// Keeps `value` under `key`: a key already kept keeps its place, a new one goes last, and the
    /// oldest go past ``capacity``.
    package mutating func keep(_ value: Value, for key: String) {
        if let kept = values[key] {
            values[key] = (value, kept.stamp)
            return
        }
        stamps += 1
        values[key] = (value, stamps)
        order.append((key, stamps))
        while values.count > capacity, head < order.count {
            let oldest = order[head]
            // A key forgotten and kept again has a newer place: its older one removes nothing.
            if isLive(oldest) {
                values.removeValue(forKey: oldest.key)
            }
            head += 1
        }
        if order.count - head > 2 * capacity {
            // More stale places than live keys could fill: keep the live ones, in order.
            order = order[head...].filter(isLive)
            head = 0
        } else if head > capacity {
            order.removeFirst(head)
            head = 0
        }
    }

    package mutating func forget(_ key: String) {
        values.removeValue(forKey: key)
    }

    private func isLive(_ place: (key: String, stamp: Int)) -> Bool {
        values[place.key]?.stamp == place.stamp
    }
}

extension IdempotentWrite {
    /// This write, when `key` came with the same request; a refusal when it came with another.
    func replayed(for key: IdempotencyKey, on list: ListName) throws(ListWriteError) -> IdempotentWrite {
        guard self.key.fingerprint == key.fingerprint else {
            throw ListWriteError(.invalid, code: "idempotency_key_reused",
                                 detail: "this Idempotency-Key came with another request on \(list); a new request needs a new key")
        }
        return self
    }
}
