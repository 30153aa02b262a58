import HTTPServer
import LiveListHTML

/// The JSON error body of the contract: `{"error": CODE, "detail": TEXT}`.
func errorResponse(_ status: Int, _ code: String, _ detail: String, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
    var response = HTTPResponse.json(errorBody(code: code, detail: detail), status: HTTPStatus(status))
    for (name, value) in headers {
        response.headers.set(name, value)
    }
    return response
}

func errorBody(code: String, detail: String) -> [UInt8] {
    Array("{\"error\":\(quoted(code)),\"detail\":\(quoted(detail))}".utf8)
}

/// The formatter the HTTP layer uses for its own refusals, so they have the same shape.
let liveListErrorFormatter: HTTPErrorFormatter = { error in
    ("application/json", errorBody(code: error.code, detail: error.detail))
}

extension HTTPRequest {
    /// The value of the cookie `name`, if sent.
    func cookie(_ name: String) -> String? {
        for header in headers.values("Cookie") {
            for pair in header.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " }
                if let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == name {
                    return String(trimmed[trimmed.index(after: equals)...])
                }
            }
        }
        return nil
    }

    /// Whether the client ranks `application/json` above `text/html` in `Accept`.
    var prefersJSON: Bool {
        guard let accept = headers["Accept"] else { return false }
        return quality(of: "application", "json", in: accept) > quality(of: "text", "html", in: accept)
    }

    /// The media type of the body, lowercased, without parameters.
    var mediaType: String? {
        headers["Content-Type"].map { $0.split(separator: ";")[0].trimmingSpaces.lowercased() }
    }
}

/// The q-value `Accept` gives `type/subtype`: the most specific matching range wins.
func quality(of type: String, _ subtype: String, in accept: String) -> Double {
    var best: (specificity: Int, q: Double) = (-1, 0)
    for range in accept.split(separator: ",") {
        let parts = range.split(separator: ";").map { $0.trimmingSpaces.lowercased() }
        guard let media = parts.first else { continue }
        let pieces = media.split(separator: "/")
        guard pieces.count == 2 else { continue }
        let specificity: Int
        if pieces[0] == type && pieces[1] == subtype {
            specificity = 2
        } else if pieces[0] == type && pieces[1] == "*" {
            specificity = 1
        } else if pieces[0] == "*" && pieces[1] == "*" {
            specificity = 0
        } else {
            continue
        }
        var q = 1.0
        for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
            q = Double(parameter.dropFirst(2)) ?? 0
        }
        if specificity > best.specificity {
            best = (specificity, q)
        }
    }
    return best.q
}

extension StringProtocol {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

/// Parses `application/x-www-form-urlencoded`.
func parseForm(_ body: [UInt8]) -> [String: String] {
    var fields: [String: String] = [:]
    for pair in body.split(separator: 0x26) {
        let parts = pair.split(separator: 0x3D, maxSplits: 1, omittingEmptySubsequences: false)
        let name = percentDecode(parts[0])
        let value = parts.count > 1 ? percentDecode(parts[1]) : ""
        if let name, let value {
            fields[name] = value
        }
    }
    return fields
}

private func percentDecode(_ bytes: ArraySlice<UInt8>) -> String? {
    var out: [UInt8] = []
    var index = bytes.startIndex
    while index < bytes.endIndex {
        let byte = bytes[index]
        if byte == 0x2B {
            out.append(0x20)
        } else if byte == 0x25, index + 2 < bytes.endIndex,
            let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
        {
            out.append(high << 4 | low)
            index += 2
        } else {
            out.append(byte)
        }
        index += 1
    }
    return String(validating: out, as: UTF8.self)
}

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30 ... 0x39: byte - 0x30
    case 0x41 ... 0x46: byte - 0x41 + 10
    case 0x61 ... 0x66: byte - 0x61 + 10
    default: nil
    }
}

/// FNV-1a 64 of `bytes` in hex: a content hash for cache-busting URLs (not a security measure).
func contentHash(_ bytes: [UInt8]) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
        hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
    }
    return String(hash, radix: 16)
}

extension HTTPStream: EventSink {}
