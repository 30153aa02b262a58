/// A write's `Idempotency-Key`: the key the client chose, and a fingerprint of the request it came
/// with (method, preconditions and body), so that the key used again with another request is told
/// apart from a retry.
public struct IdempotencyKey: Sendable, Hashable {
    /// The client's key: 1 to 255 visible ASCII characters.
    public var key: String
    /// A digest of the request (32 bytes).
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

/// The idempotent writes of one list that a process remembers itself: the most recent
/// ``capacity``, the oldest forgotten first. A store shared by several processes keeps them too
/// (``ListStore/idempotentWrite(of:key:)``), so that a retry reaches them on any process.
struct RecentIdempotentWrites {
    static let capacity = 1_000
    private var byKey: [String: IdempotentWrite] = [:]
    private var order: [String] = []
    private var head = 0

    func find(_ key: String) -> IdempotentWrite? {
        byKey[key]
    }

    mutating func remember(_ write: IdempotentWrite) {
        guard byKey.updateValue(write, forKey: write.key.key) == nil else { return }
        order.append(write.key.key)
        if byKey.count > Self.capacity {
            byKey.removeValue(forKey: order[head])
            head += 1
            if head > Self.capacity {
                order.removeFirst(head)
                head = 0
            }
        }
    }
}
