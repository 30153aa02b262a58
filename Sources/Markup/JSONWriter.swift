/// Writes JSON text as UTF-8 bytes: the changesets and snapshots that are encoded once per version and
/// shared by every viewer, and the error bodies of the HTTP layer (the one JSON string escaper).
///
/// Strings are escaped per RFC 8259 (quote, backslash, controls), and also U+2028 and U+2029, so that the
/// output is one line that any JavaScript or SSE reader takes as is. Objects are written field by field in
/// the caller's order, and the writer puts the commas between fields and array items itself.
package struct JSONWriter {
    package var bytes: [UInt8] = []
    /// Whether the next value in the current container needs a comma before it.
    private var needsComma = false

    package init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    package mutating func beginObject() {
        separate()
        bytes.append(0x7B)
        needsComma = false
    }

    package mutating func endObject() {
        bytes.append(0x7D)
        needsComma = true
    }

    package mutating func beginArray() {
        separate()
        bytes.append(0x5B)
        needsComma = false
    }

    package mutating func endArray() {
        bytes.append(0x5D)
        needsComma = true
    }

    /// Writes `"name":`; the value follows.
    package mutating func key(_ name: StaticString) {
        separate()
        bytes.append(0x22)
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [0x22, 0x3A])
        needsComma = false
    }

    package mutating func string(_ value: String) {
        separate()
        appendQuoted(value.utf8)
        needsComma = true
    }

    /// Writes a JSON string whose content is the given UTF-8 bytes (rendered HTML, say).
    package mutating func string(utf8 value: some Collection<UInt8>) {
        separate()
        appendQuoted(value)
        needsComma = true
    }

    package mutating func string(_ value: String?) {
        if let value {
            string(value)
        } else {
            null()
        }
    }

    package mutating func int(_ value: Int) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    package mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? Array("true".utf8) : Array("false".utf8))
        needsComma = true
    }

    package mutating func null() {
        separate()
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        needsComma = true
    }

    /// Writes a value that is already valid JSON text (a stored PUT body, say).
    package mutating func raw(json: some Collection<UInt8>) {
        separate()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    private mutating func separate() {
        if needsComma {
            bytes.append(0x2C)
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func appendQuoted(_ utf8: some Collection<UInt8>) {
        bytes.append(0x22)
        if utf8.withContiguousStorageIfAvailable({ appendEscaped($0) }) == nil {
            Array(utf8).withUnsafeBufferPointer { appendEscaped($0) }
        }
        bytes.append(0x22)
    }

    /// Copies unchanged runs in bulk; escapes quote, backslash, controls, U+2028 and U+2029 (writing
    /// each escape byte by byte: no allocation per escaped character).
    private mutating func appendEscaped(_ source: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        var index = 0
        let count = source.count
        while index < count {
            let byte = source[index]
            let width: Int
            if byte == 0x22 || byte == 0x5C || byte < 0x20 {
                width = 1
            } else if byte == 0xE2, index + 2 < count, source[index + 1] == 0x80,
                source[index + 2] == 0xA8 || source[index + 2] == 0xA9
            {
                width = 3
            } else {
                index += 1
                continue
            }
            if runStart < index {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[runStart ..< index]))
            }
            bytes.append(0x5C)
            switch byte {
            case 0x22, 0x5C: bytes.append(byte)
            case 0x0A: bytes.append(0x6E)
            case 0x0D: bytes.append(0x72)
            case 0x09: bytes.append(0x74)
            case 0xE2:
                // \u2028 or \u2029
                for digit in [0x75, 0x32, 0x30, 0x32] as [UInt8] { bytes.append(digit) }
                bytes.append(source[index + 2] == 0xA8 ? 0x38 : 0x39)
            default:
                bytes.append(0x75)
                bytes.append(0x30)
                bytes.append(0x30)
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0xF)])
            }
            index += width
            runStart = index
        }
        if runStart < count {
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[runStart ..< count]))
        }
    }
}
