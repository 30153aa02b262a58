public import Foundation

/// The 64-bit FNV-1a hash that fingerprints scenario inputs.
///
/// Start at `0xcbf29ce484222325`; for each byte, `h = (h ^ byte) * 0x100000001b3` (wrapping).
/// Integers are fed as 8 little-endian bytes (as `Int64`).
public struct FNV1a64: Sendable {
    /// The hash of everything fed so far.
    public private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325

    /// Creates a hash of nothing yet.
    public init() {}

    /// Feeds one byte.
    public mutating func feed(byte: UInt8) {
        value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }

    /// Feeds an integer as its 8 little-endian bytes.
    public mutating func feed(_ integer: Int) {
        var bits = UInt64(bitPattern: Int64(integer))
        for _ in 0 ..< 8 {
            feed(byte: UInt8(truncatingIfNeeded: bits))
            bits >>= 8
        }
    }

    /// Feeds the 16 bytes of a UUID, in order.
    public mutating func feed(_ uuid: UUID) {
        withUnsafeBytes(of: uuid.uuid) { bytes in
            for byte in bytes {
                feed(byte: byte)
            }
        }
    }
}

/// The fingerprint of a linear ``Item`` list: the count, then each element's id and payload.
public func fingerprint(_ items: [Item]) -> UInt64 {
    var hash = FNV1a64()
    hash.feed(items.count)
    for item in items {
        hash.feed(item.id)
        hash.feed(item.payload)
    }
    return hash.value
}

/// The fingerprint of a UUID list: the count, then the 16 bytes of each UUID.
public func fingerprint(_ uuids: [UUID]) -> UInt64 {
    var hash = FNV1a64()
    hash.feed(uuids.count)
    for uuid in uuids {
        hash.feed(uuid)
    }
    return hash.value
}

/// The fingerprint of a sectioned list: the section count, then for each section its model's id and
/// payload and its cell count, then each cell's id and payload.
public func fingerprint(_ sections: [ItemSection]) -> UInt64 {
    var hash = FNV1a64()
    hash.feed(sections.count)
    for section in sections {
        hash.feed(section.model.id)
        hash.feed(section.model.payload)
        hash.feed(section.elements.count)
        for item in section.elements {
            hash.feed(item.id)
            hash.feed(item.payload)
        }
    }
    return hash.value
}

/// The fingerprints of a scenario's two sides.
public struct Fingerprints: Equatable, Sendable, CustomStringConvertible {
    /// The fingerprint of the source list.
    public var source: UInt64
    /// The fingerprint of the target list.
    public var target: UInt64

    /// Creates a pair of fingerprints.
    public init(source: UInt64, target: UInt64) {
        self.source = source
        self.target = target
    }

    /// Both fingerprints as 16 lowercase hex digits, `source → target`.
    public var description: String {
        "\(hex(source)) → \(hex(target))"
    }
}

/// `value` as 16 lowercase hexadecimal digits, as the fingerprint table of `docs/DIFF-SCENARIOS.md` writes it.
public func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}
