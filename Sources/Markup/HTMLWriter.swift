/// A byte buffer that HTML is written into, with the escaping rules of the HTML serialiser.
///
/// Everything is appended as UTF-8 bytes: unchanged runs are copied in bulk and only the few bytes that
/// need it are replaced, with no per-character `String` work (Elementary's approach). Text and attribute
/// values are escaped by construction; raw markup goes in only through ``appendRaw(_:)-(String)``, which the
/// DSL exposes as ``UnsafeRawHTML``.
public struct HTMLWriter: Sendable {
    /// The bytes written so far.
    public var bytes: [UInt8]
    /// The id of the form that controls written with ``FormControl`` belong to (their `form`
    /// attribute), set by whoever renders content for one form: LiveList's adapter sets the form of
    /// the list being rendered, so that a list's buttons post to it on any page that shows the list.
    /// Nil writes the control's own fallback.
    public var formID: String?

    /// Creates an empty writer, reserving `capacity` bytes.
    @inlinable
    public init(capacity: Int = 1024) {
        bytes = []
        formID = nil
        bytes.reserveCapacity(capacity)
    }

    /// The bytes written so far, as a string.
    public var string: String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// Appends markup as is. Only for markup the program itself wrote: never for data.
    @inlinable
    public mutating func appendRaw(_ markup: StaticString) {
        markup.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends markup as is. Only for markup the program itself wrote or checked: never for data.
    @inlinable
    public mutating func appendRaw(_ markup: String) {
        bytes.append(contentsOf: markup.utf8)
    }

    /// Appends already encoded UTF-8 markup as is.
    @inlinable
    public mutating func appendRaw(_ markup: some Sequence<UInt8>) {
        bytes.append(contentsOf: markup)
    }

    /// Appends text content: `&`, `<` and `>` become character references and NUL becomes U+FFFD, so
    /// no text can open a tag or end the element it is in.
    @inlinable
    public mutating func appendText(_ text: String) {
        append(text, escaping: false)
    }

    /// Appends the value of a double-quoted attribute: `&`, `<`, `>`, `"` and `'` become character
    /// references, as do TAB, LF and CR (so that they survive the parser's newline normalisation); NUL
    /// becomes U+FFFD.
    @inlinable
    public mutating func appendAttributeValue(_ value: String) {
        append(value, escaping: true)
    }

    /// Appends ` name="value"` (or ` name` for a boolean attribute, when `value` is nil).
    @inlinable
    public mutating func appendAttribute(name: String, value: String?) {
        bytes.append(0x20)
        bytes.append(contentsOf: name.utf8)
        if let value {
            bytes.append(contentsOf: [0x3D, 0x22])  // ="
            appendAttributeValue(value)
            bytes.append(0x22)
        }
    }

    @inlinable
    mutating func append(_ string: String, escaping inAttribute: Bool) {
        var string = string
        string.withUTF8 { source in
            var runStart = 0
            for index in 0 ..< source.count {
                let byte = source[index]
                // Every byte that needs escaping is below 0x40: one comparison for most text.
                if byte >= 0x40 {
                    continue
                }
                let replacement: StaticString
                switch byte {
                case 0x26: replacement = "&amp;"
                case 0x3C: replacement = "&lt;"
                case 0x3E: replacement = "&gt;"
                case 0x00: replacement = "\u{FFFD}"
                case 0x22 where inAttribute: replacement = "&quot;"
                case 0x27 where inAttribute: replacement = "&#39;"
                case 0x09 where inAttribute: replacement = "&#9;"
                case 0x0A where inAttribute: replacement = "&#10;"
                case 0x0D where inAttribute: replacement = "&#13;"
                default: continue
                }
                if runStart < index {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[runStart ..< index]))
                }
                replacement.withUTF8Buffer { bytes.append(contentsOf: $0) }
                runStart = index &+ 1
            }
            if runStart < source.count {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[runStart...]))
            }
        }
    }
}
