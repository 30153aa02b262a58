import COpenSSL

/// Session ids and the CSRF tokens derived from them.
///
/// A page view stores nothing on the server: it only sets a random session cookie (when the browser has
/// none) and embeds `HMAC-SHA256(secret, session id)` as the CSRF token, in a meta tag for the script and
/// in hidden fields for forms. A token is valid while it matches the cookie's HMAC, so crawlers and load
/// generators cannot fill memory, and a forged request without the cookie cannot act.
struct SessionKeys: Sendable {
    /// The server secret (32 bytes), kept in the data directory so tokens survive restarts.
    let secret: [UInt8]

    /// The name of the session cookie.
    static let cookieName = "livelist_session"

    /// A new random session id: 128 bits as 32 lowercase hex digits.
    static func newSessionID() -> String {
        var generator = SystemRandomNumberGenerator()
        return hex((0 ..< 16).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
    }

    /// Whether `id` has the shape of a session id (so that nothing else is ever stored or echoed).
    static func isSessionID(_ id: String) -> Bool {
        id.utf8.count == 32 && id.utf8.allSatisfy { (0x30 ... 0x39).contains($0) || (0x61 ... 0x66).contains($0) }
    }

    /// The CSRF token of a session.
    func csrfToken(for sessionID: String) -> String {
        hmacSHA256(key: secret, message: Array(("livelist-csrf:" + sessionID).utf8))
    }

    /// Whether `token` is the CSRF token of `sessionID`, compared in constant time.
    func verify(token: String, sessionID: String) -> Bool {
        guard Self.isSessionID(sessionID) else { return false }
        let expected = Array(csrfToken(for: sessionID).utf8)
        let given = Array(token.utf8)
        guard expected.count == given.count else { return false }
        var difference: UInt8 = 0
        for index in 0 ..< expected.count {
            difference |= expected[index] ^ given[index]
        }
        return difference == 0
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// HMAC-SHA256 of `message` under `key`, as lowercase hex (OpenSSL).
func hmacSHA256(key: [UInt8], message: [UInt8]) -> String {
    var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    _ = key.withUnsafeBytes { key in
        message.withUnsafeBytes { data in
            HMAC(EVP_sha256(), key.baseAddress, Int32(key.count), data.baseAddress?.assumingMemoryBound(to: UInt8.self),
                 data.count, &digest, &length)
        }
    }
    return SessionKeys.hex(Array(digest[0 ..< Int(length)]))
}
