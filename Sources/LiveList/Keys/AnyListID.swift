/// A type-erased identifier of a cell or a section, compared and hashed by its list key.
///
/// `AnyListID` is what ``CellNode`` and ``Section`` store, whatever the type of the id they were
/// given. It replaces Carbon's `AnyHashable`, which is not `Sendable`. Two ids are equal exactly
/// when their keys are equal byte for byte, *whatever their types*: `AnyListID(1) == AnyListID("1")`. So two cells
/// with the ids `1` and `"1"` in one list are a duplicate, which the differ reports as an error,
/// exactly as the browser would see it (both would be `data-cell="1"`).
///
///     let a = AnyListID(42)        // key "42"
///     let b = AnyListID("42")      // key "42"
///     a == b                       // true
///     a.base as? Int               // 42: the original value is kept
///
/// Any `Hashable` and `Sendable` value can be an id, as any `Hashable` value can in Carbon. A
/// ``ListKeyConvertible`` value names itself with its ``ListKeyConvertible/listKey``; a
/// `RawRepresentable` value whose raw value is ``ListKeyConvertible`` (an `enum Tab: String`) by
/// its raw value's key; any other value by its description, `String(describing:)`: the case name
/// of a plain enum (`Filter.done` is `"done"`), the fields of a plain struct
/// (`Point(x: 1, y: 2)`).
///
///     enum Filter: Hashable { case all, done }
///     AnyListID(Filter.done).key   // "done"
///
/// A description is a stable key only when equal values always print alike, in every process:
/// true of enums, numbers, strings and structs made of them, not of a `Set` or a `Dictionary`
/// (their order changes from one process to the next) nor of a class without a `description`.
/// Give such a type a ``ListKeyConvertible`` conformance.
///
/// Its `description` is the key and its `debugDescription` the key quoted, as in
/// `duplicate element identifier "42" in the target`.
public struct AnyListID: Sendable {
    /// The id as it was given.
    public let base: any Hashable & Sendable

    /// The list key of ``base``: what the id is compared, hashed and written out by.
    public let key: String

    /// Wraps an id, computing its key once.
    ///
    /// Wrapping an `AnyListID` gives it back unchanged, not a wrapper of a wrapper.
    ///
    /// - Parameter id: The id to wrap.
    @inlinable
    public init(_ id: some ListKeyConvertible) {
        if let erased = id as? AnyListID {
            self = erased
        } else {
            base = id
            key = id.listKey
        }
    }

    /// Wraps any `Hashable` and `Sendable` id, computing its key once: the key of a
    /// ``ListKeyConvertible`` value, the raw value's key of a `RawRepresentable` value whose raw
    /// value is one, and the description of any other value.
    ///
    /// Wrapping an `AnyListID` gives it back unchanged, not a wrapper of a wrapper.
    ///
    /// - Parameter id: The id to wrap.
    @inlinable
    @_disfavoredOverload
    public init(_ id: some Hashable & Sendable) {
        if let erased = id as? AnyListID {
            self = erased
        } else {
            base = id
            key = Self.key(of: id)
        }
    }

    /// The key of an id whose type is not known to be ``ListKeyConvertible`` at compile time.
    ///
    /// Inlinable, so that where the id's type is known (a cell of a concrete component) the casts
    /// are resolved by the compiler and cost nothing at run time.
    @inlinable
    static func key(of id: some Hashable & Sendable) -> String {
        if let convertible = id as? any ListKeyConvertible {
            return convertible.listKey
        }
        if let raw = id as? any RawRepresentable, let key = rawKey(of: raw) {
            return key
        }
        return String(describing: id)
    }

    @usableFromInline
    static func rawKey(of value: some RawRepresentable) -> String? {
        (value.rawValue as? any ListKeyConvertible)?.listKey
    }

    /// Whether ``key`` can name a cell or a section in HTML: any Unicode text except one holding
    /// NUL (U+0000). The empty key is valid.
    @inlinable
    public var isValidKey: Bool {
        Self.isValidKey(key)
    }

    /// Whether `key` can name a cell or a section in HTML: any Unicode text except one holding
    /// NUL (U+0000), which no HTML parser keeps. The empty key is valid.
    ///
    /// - Parameter key: A list key.
    /// - Returns: `false` when the key contains NUL.
    @inlinable
    public static func isValidKey(_ key: String) -> Bool {
        !key.utf8.contains(0)
    }

    /// Returns ``base`` cast to the given type, if it is one.
    ///
    /// - Parameter type: The expected type of the original id.
    /// - Returns: The original id, or `nil` when it has another type.
    @inlinable
    public func `as`<ID>(_ type: ID.Type) -> ID? {
        base as? ID
    }
}

// MARK: - Equality by key

extension AnyListID: Hashable {
    /// Ids are equal when their keys are: `AnyListID(1) == AnyListID("1")`.
    ///
    /// Keys are compared by their UTF-8 bytes, as a browser compares attribute values, not by
    /// Swift's canonical equivalence: `"\u{E9}"` (é) and `"e\u{301}"` (e and a combining accent)
    /// are two keys, since `data-cell="é"` matches only one of them in the DOM.
    @inlinable
    public static func == (lhs: AnyListID, rhs: AnyListID) -> Bool {
        let left = lhs.key.utf8
        let right = rhs.key.utf8
        guard left.count == right.count else { return false }
        // Native strings hold their bytes contiguously: compared as buffers, which is much faster
        // than walking the views.
        if let same = left.withContiguousStorageIfAvailable({ l in right.withContiguousStorageIfAvailable { r in l.elementsEqual(r) } }),
            let same {
            return same
        }
        return left.elementsEqual(right)
    }

    /// Hashes the key's bytes only, consistently with `==`.
    @inlinable
    public func hash(into hasher: inout Hasher) {
        // The bytes, as `==` compares them (String's own hashing normalizes first, which costs more).
        if key.utf8.withContiguousStorageIfAvailable({ hasher.combine(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            for byte in key.utf8 { hasher.combine(byte) }
        }
        hasher.combine(key.utf8.count)
    }
}

extension AnyListID: ListKeyConvertible {
    /// The key: an `AnyListID` is a valid id for another node.
    @inlinable
    public var listKey: String {
        key
    }
}

// MARK: - Literals

extension AnyListID: ExpressibleByStringLiteral {
    /// An id whose base is the given `String`.
    @inlinable
    public init(stringLiteral value: String) {
        self.init(value)
    }
}

extension AnyListID: ExpressibleByIntegerLiteral {
    /// An id whose base is the given `Int`.
    @inlinable
    public init(integerLiteral value: Int) {
        self.init(value)
    }
}

// MARK: - Descriptions

extension AnyListID: CustomStringConvertible, CustomDebugStringConvertible {
    /// The key itself.
    public var description: String {
        key
    }

    /// The key as a quoted Swift string literal, with special characters escaped: `"a\"b"`.
    public var debugDescription: String {
        key.debugDescription
    }
}
