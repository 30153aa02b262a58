#if canImport(FoundationEssentials)
public import FoundationEssentials
#elseif canImport(Foundation)
public import Foundation
#endif

#if canImport(FoundationEssentials) || canImport(Foundation)
extension UUID: ListKeyConvertible {
    /// The lowercase hyphenated form, 36 characters: `"e621e1f8-c36c-495a-93fc-0c247a3e6e5f"`.
    ///
    /// Lowercase as in RFC 9562 (section 4), whatever the platform's `uuidString` spells.
    @inlinable
    public var listKey: String {
        uuidString.lowercased()
    }
}
#endif
