/// An open-addressing hash index from identifiers to positions in a flat array of identifiers.
///
/// It stores positions only (32-bit slots, linear probing, load factor at most one half) and compares the
/// identifiers in the caller's array, so building it costs one hash per identifier and no allocation per
/// element. `Dictionary` would hash the same way but box each entry's key and value.
@usableFromInline
struct IdentifierTable<ID: Hashable> {
    @usableFromInline var slots: [Int32]
    @usableFromInline let mask: Int

    /// Creates an empty table sized for `count` identifiers.
    @inlinable
    init(capacityFor count: Int) {
        var size = 8
        while size < count * 2 {
            size &<<= 1
        }
        slots = Array(repeating: -1, count: size)
        mask = size &- 1
    }

    /// Inserts position `index` of `ids`; returns the position already holding an equal identifier, if any
    /// (the table is then unchanged).
    @inlinable
    mutating func insert(_ index: Int, of ids: UnsafeBufferPointer<ID>) -> Int? {
        let id = ids[index]
        var slot = id.hashValue & mask
        return slots.withUnsafeMutableBufferPointer { slots -> Int? in
            while true {
                let held = Int(slots[slot])
                if held < 0 {
                    slots[slot] = Int32(truncatingIfNeeded: index)
                    return nil
                }
                if ids[held] == id {
                    return held
                }
                slot = (slot &+ 1) & mask
            }
        }
    }

    /// Returns the position in `ids` of an identifier equal to `id`, if the table holds one.
    @inlinable
    func find(_ id: ID, in ids: UnsafeBufferPointer<ID>) -> Int? {
        var slot = id.hashValue & mask
        return slots.withUnsafeBufferPointer { slots -> Int? in
            while true {
                let held = Int(slots[slot])
                if held < 0 {
                    return nil
                }
                if ids[held] == id {
                    return held
                }
                slot = (slot &+ 1) & mask
            }
        }
    }
}
