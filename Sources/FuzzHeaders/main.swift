// libFuzzer harness for the header helpers (LiveListHTTP's HeaderParsing and media types, LiveListServer's list-specific parsers): cookies, q-values,
// forms, percent-decoding, action values, versions, entity tags, bearer credentials and the conditions
// of a PUT. Build and run it with
// Scripts/fuzz-headers.sh, which compiles it with -sanitize=fuzzer,address -DFUZZING; a plain build
// links a stub so that `swift build` and `swift test` stay unaffected.
//
// Every helper gets the same input; beyond not trapping, each answer must keep the helper's promise
// (checked below), or the harness stops the process and the fuzzer keeps the input.
import LibFuzzerDriver
import LiveListHTTP
import LiveListEngine
import LiveListServer
#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    HeaderFuzzing.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

enum HeaderFuzzing {
    static func run(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)

        if let type = HTTPRequest.mediaType(ofContentType: text) {
            check(!type.isEmpty && !type.utf8.contains(0x3B) && !type.utf8.contains { (0x41 ... 0x5A).contains($0) }, "mediaType gave \(type.debugDescription)")
            check(type.first != " " && type.first != "\t" && type.last != " " && type.last != "\t", "mediaType kept blanks: \(type.debugDescription)")
        }

        // The first byte chooses where the cookie's name ends and the header begins.
        let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        let name = String(decoding: bytes[..<split], as: UTF8.self)
        if let value = HeaderParsing.cookie(name, in: [text, String(decoding: bytes[split...], as: UTF8.self)]) {
            // Bytes, not Characters: U+037E (Greek question mark) is canonically equivalent to ';', so
            // `String.contains(";")` finds it in a value whose bytes hold no ';'.
            check(!value.utf8.contains(0x3B), "a cookie value holds a ';': \(value.debugDescription)")
        }

        if let q = HeaderParsing.qValue(text) {
            check(q >= 0 && q <= 1, "qValue gave \(q) for \(text.debugDescription)")
        }
        for (type, subtype) in [("text", "html"), ("application", "json")] {
            let q = HeaderParsing.quality(of: type, subtype, in: text)
            check(q >= 0 && q <= 1, "quality gave \(q) for \(text.debugDescription)")
        }

        let fields = HeaderParsing.form(bytes)
        check(fields.count <= bytes.count + 1, "form gave more fields than bytes")
        // Percent-encoding every byte and decoding it gives the bytes back (when they are UTF-8).
        var encoded = Array("k=".utf8)
        for byte in bytes {
            encoded += [0x25, hexDigit(byte >> 4), hexDigit(byte & 0xF)]
        }
        let decoded = HeaderParsing.form(encoded)["k"]
        check(decoded == String(validating: bytes, as: UTF8.self), "form does not invert percent-encoding")
        _ = HeaderParsing.formDecode(bytes[split...])

        let (type, cell) = HeaderParsing.action(text)
        if let cell {
            check(type + ":" + cell == text, "action lost text: \(text.debugDescription)")
        } else {
            check(text == type || text == type + ":", "action lost text: \(text.debugDescription)")
        }

        if let version = ListVersion.parse(text) {
            check(version >= 0 && text.utf8.allSatisfy { (0x30 ... 0x39).contains($0) }, "version accepted \(text.debugDescription)")
        }
        if let version = HeaderParsing.entityTag(text) {
            check(version >= 0 && text.contains("\""), "entityTag accepted \(text.debugDescription)")
        }

        if let credentials = HeaderParsing.bearerCredentials(text) {
            check(!credentials.isEmpty && text.utf8.count > 7 && Array(text.utf8)[6] == 0x20, "bearerCredentials accepted \(text.debugDescription)")
        }

        let rest = String(decoding: bytes[split...], as: UTF8.self)
        for (ifMatch, ifNoneMatch) in [(text, nil), (nil, text), (name, rest)] as [(String?, String?)] {
            switch HeaderParsing.writeCondition(ifMatch: ifMatch, ifNoneMatch: ifNoneMatch) {
            case let .success(condition):
                switch condition {
                case .none: check(ifMatch == nil && ifNoneMatch == nil, "no condition from headers")
                case .version: check(ifMatch != nil && ifNoneMatch == nil, "a version without If-Match alone")
                case .exists: check(ifMatch?.contains("*") == true && ifNoneMatch == nil, "exists without If-Match: *")
                case .absent: check(ifNoneMatch?.contains("*") == true && ifMatch == nil, "absent without If-None-Match: *")
                }
            case let .failure(answer):
                check(answer.status == .badRequest, "writeCondition refused with \(answer.status.code)")
            }
        }
    }

    static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 0x30 + nibble : 0x61 + nibble - 10
    }

    static func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition {
            fatalError(message())
        }
    }
}

@main
struct FuzzMain {
    static func main() {
        runLibFuzzer(harness: "FuzzHeaders", script: "Scripts/fuzz-headers.sh") { data, size in fuzz(data, size) }
    }
}
