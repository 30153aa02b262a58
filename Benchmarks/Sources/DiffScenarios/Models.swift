public import LiveListTestSupport
public import Foundation
public import ListDiff

/// A list element of the scenarios: `id` is its identity, `payload` its content.
///
/// `Hashable` and `Equatable` are synthesised over both fields, so the standard library's
/// `difference(from:)` sees an updated element (same `id`, other `payload`) as a different one,
/// while ListDiff matches it by `id` and reports an update.
public struct Item: Hashable, Sendable, Differentiable, CustomStringConvertible {
    /// The identity of the element.
    public var id: Int
    /// The content of the element; an update changes it.
    public var payload: Int

    /// Creates an element.
    public init(id: Int, payload: Int) {
        self.id = id
        self.payload = payload
    }

    /// The identifier is `id` alone.
    public var differenceIdentifier: Int {
        id
    }

    /// Content is equal when the payloads are.
    public func isContentEqual(to source: Item) -> Bool {
        payload == source.payload
    }

    public var description: String {
        "Item(\(id), \(payload))"
    }
}

/// The model of a section (its own identity and content, like a header), with the same rules as ``Item``.
public struct SectionModel: Hashable, Sendable, Differentiable, CustomStringConvertible {
    /// The identity of the section.
    public var id: Int
    /// The section's own content; an update changes it.
    public var payload: Int

    /// Creates a section model.
    public init(id: Int, payload: Int) {
        self.id = id
        self.payload = payload
    }

    /// The identifier is `id` alone.
    public var differenceIdentifier: Int {
        id
    }

    /// Content is equal when the payloads are.
    public func isContentEqual(to source: SectionModel) -> Bool {
        payload == source.payload
    }

    public var description: String {
        "SectionModel(\(id), \(payload))"
    }
}

/// A section of the sectioned scenario: a ``SectionModel`` holding ``Item`` cells.
public typealias ItemSection = ArraySection<SectionModel, Item>

/// UUIDs are their own identifiers and compare their content with `==`, as in DifferenceKit's benchmark:
/// both come from ListDiff's defaults for `Hashable` values.
extension UUID: @retroactive Differentiable {}

/// Makes the next UUID of an R-UUID scenario from two draws of `rng`: bytes 0 to 7 are the first draw
/// in little-endian order, bytes 8 to 15 the second. No version or variant bits are forced.
public func makeUUID(using rng: inout SplitMix64) -> UUID {
    let a = rng.next()
    let b = rng.next()
    /// Byte `k` (0 is the least significant) of `x`.
    func byte(_ x: UInt64, _ k: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: x >> (8 * k))
    }
    return UUID(uuid: (
        byte(a, 0), byte(a, 1), byte(a, 2), byte(a, 3), byte(a, 4), byte(a, 5), byte(a, 6), byte(a, 7),
        byte(b, 0), byte(b, 1), byte(b, 2), byte(b, 3), byte(b, 4), byte(b, 5), byte(b, 6), byte(b, 7)
    ))
}
