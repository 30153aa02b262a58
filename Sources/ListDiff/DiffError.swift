/// Bad input to the differ.
public enum DiffError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Where a duplicate was found.
    public enum Side: String, Sendable {
        /// The previous collection.
        case source
        /// The next collection.
        case target
    }

    /// Two sections of one list share an identifier. `identifier` describes it (for messages only).
    case duplicateSectionIdentifier(String, in: Side)
    /// Two elements of one list share an identifier (elements are unique across all sections).
    case duplicateElementIdentifier(String, in: Side)

    /// The error in words, naming the duplicate key and the collection that holds it.
    public var description: String {
        switch self {
        case let .duplicateSectionIdentifier(id, side):
            "duplicate section identifier \(id) in the \(side.rawValue)"
        case let .duplicateElementIdentifier(id, side):
            "duplicate element identifier \(id) in the \(side.rawValue)"
        }
    }

    /// The identifier as named in an error. Identifiers are described for people only: the differ
    /// never uses this string to match anything.
    @usableFromInline
    static func describe(_ id: some Hashable) -> String {
        if let string = id as? String {
            return "\"" + string + "\""
        }
        return String(reflecting: id)
    }
}
