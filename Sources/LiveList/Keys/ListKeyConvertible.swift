/// A type whose values name cells and sections with a stable string: their *list key*.
///
/// Conforming is optional: any `Hashable` and `Sendable` value can be an id, named by its
/// description when it does not conform (see ``AnyListID``). Conform to choose the key yourself,
/// for a type whose description is long, changes between processes (a `Set`, a `Dictionary`) or
/// does not tell values apart.
///
/// The key is what the differ matches, what the HTML layer writes into `data-cell` and
/// `data-section` attributes, and what browsers and JSON clients send back. It must therefore be
/// the same for equal values in every process, on every platform and in every release: never
/// derive it from `String(describing:)`, `hashValue` or a memory address.
///
/// Keys are compared as strings, byte for byte, so two ids of different types with the same key
/// name the same cell: in one list, the ids `1` and `"1"` are a duplicate (see ``AnyListID``).
///
/// The standard conformances are:
///
/// | Type | Key |
/// |---|---|
/// | `String`, `Substring` | the string itself |
/// | `Int`, `Int8` … `Int128`, `UInt`, `UInt8` … `UInt128` | decimal digits, `-` when negative: `-42` |
/// | `Bool` | `"true"` or `"false"` |
/// | `UUID` | the lowercase hyphenated form: `"e621e1f8-c36c-495a-93fc-0c247a3e6e5f"` |
/// | a `RawRepresentable` type whose raw value is `ListKeyConvertible` | the raw value's key |
///
/// Any Unicode text is a valid key except one holding NUL (U+0000), which the HTML layer refuses
/// (see ``AnyListID/isValidKey``).
///
/// Example of an id type of your own:
///
///     struct TeamMember: Hashable, Sendable, ListKeyConvertible {
///         var team: String
///         var login: String
///
///         // A separator that cannot occur in a team name keeps keys unique.
///         var listKey: String { team + "/" + login }
///     }
///
///     enum Tab: String, ListKeyConvertible {  // the key is the raw value
///         case inbox, archive
///     }
public protocol ListKeyConvertible: Hashable, Sendable {
    /// The stable string that names this value in a list.
    ///
    /// Equal values must have equal keys. Different values should have different keys: two ids
    /// with the same key are the same cell (or section) to the differ.
    var listKey: String { get }
}

// MARK: - Raw values

extension ListKeyConvertible where Self: RawRepresentable, RawValue: ListKeyConvertible {
    /// The key of the raw value: `Tab.inbox` of `enum Tab: String` has the key `"inbox"`.
    @inlinable
    public var listKey: String {
        rawValue.listKey
    }
}

// MARK: - Text

extension String: ListKeyConvertible {
    /// The string itself.
    @inlinable
    public var listKey: String {
        self
    }
}

extension Substring: ListKeyConvertible {
    /// The characters of the substring, as a `String`.
    @inlinable
    public var listKey: String {
        String(self)
    }
}

// MARK: - Booleans

extension Bool: ListKeyConvertible {
    /// `"true"` or `"false"`.
    @inlinable
    public var listKey: String {
        self ? "true" : "false"
    }
}

// MARK: - Integers

extension BinaryInteger where Self: ListKeyConvertible {
    /// The decimal digits of the value, preceded by `-` when it is negative: `-42`, `0`,
    /// `18446744073709551615`. No sign for positive values, no leading zeros, no grouping.
    @inlinable
    public var listKey: String {
        String(self, radix: 10)
    }
}

extension Int: ListKeyConvertible {}
extension Int8: ListKeyConvertible {}
extension Int16: ListKeyConvertible {}
extension Int32: ListKeyConvertible {}
extension Int64: ListKeyConvertible {}
extension UInt: ListKeyConvertible {}
extension UInt8: ListKeyConvertible {}
extension UInt16: ListKeyConvertible {}
extension UInt32: ListKeyConvertible {}
extension UInt64: ListKeyConvertible {}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension Int128: ListKeyConvertible {}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension UInt128: ListKeyConvertible {}
