/// A list's name as it appears in URLs and on the wire: `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
///
/// Anything else is not a list (404 over HTTP). The rule also makes every name a safe file name: it
/// cannot be empty, start with a dot, or hold a slash.
public struct ListName: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The name.
    public let rawValue: String

    /// Returns nil unless `rawValue` is a valid list name.
    public init?(_ rawValue: String) {
        let bytes = Array(rawValue.utf8)
        guard (1 ... 64).contains(bytes.count), Self.isAlphanumeric(bytes[0]),
            bytes.allSatisfy({ Self.isAlphanumeric($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D })
        else {
            return nil
        }
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    public static func < (lhs: ListName, rhs: ListName) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30 ... 0x39).contains(byte) || (0x41 ... 0x5A).contains(byte) || (0x61 ... 0x7A).contains(byte)
    }
}
