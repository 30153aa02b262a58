/// Whether a loop leaves new connections in the kernel's backlog: while the node has no slot for them
/// but gives slots back (a crowd being answered), and for at most `limit` after it last gave one back.
struct SlotWait {
    /// How long connections are left in the backlog while the node has no slot and gives none back.
    static let limit: UInt64 = 500_000_000
    /// Since when the node has had no slot and given none back (0: it had one), and its count then.
    private var fullSince: UInt64 = 0
    private var releasedWhenFull = 0

    /// Whether to wait, given whether a slot is free now and the node's count of slots given back.
    mutating func waits(free: Bool, released: Int, now: UInt64) -> Bool {
        if free {
            fullSince = 0
            return false
        }
        if fullSince == 0 || released != releasedWhenFull {
            fullSince = now
            releasedWhenFull = released
        }
        return now &- fullSince < Self.limit
    }
}
