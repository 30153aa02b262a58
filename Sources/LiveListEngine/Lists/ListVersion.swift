/// The versions of lists: integers that only grow and are never reused (docs/PROTOCOL.md, "Versions").
public enum ListVersion {
    /// The largest version a list may reach: 2^53 − 1, the largest integer a JavaScript client holds
    /// exactly. A write that would need a larger version is refused (`version_exhausted`).
    public static let maximum = 9_007_199_254_740_991

    /// A version as text (a query, a header, a stored file): a non-negative decimal integer, ASCII digits
    /// only (no sign, no spaces), at most 18 of them so that it fits; nil for anything else.
    package static func parse(_ text: some StringProtocol) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ (0x30 ... 0x39).contains($0) }) else {
            return nil
        }
        return Int(text)
    }
}
