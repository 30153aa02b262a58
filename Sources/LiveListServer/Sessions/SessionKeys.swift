import COpenSSL

/// Session ids, the cookies that carry them, and the CSRF tokens derived from them.
///
/// A page view stores nothing on the server. A browser without a valid session cookie gets a new one:
/// the session id (16 random bytes as 32 lowercase hex digits) followed by its tag, the first 16 bytes
/// of `HMAC-SHA256(secret, "livelist-session:" + id)` as 32 more hex digits. Only the server can mint
/// a cookie that verifies, and it verifies one without any table (so, later, every node sharing the
/// secret can): a cookie the client made up, or one from before tags, is treated as no session.
///
/// The CSRF token of a session is `HMAC-SHA256(secret, "livelist-csrf:" + id)`, embedded in a meta tag
/// for the script and in hidden fields for forms. A token is valid while it matches the cookie's
/// session, so crawlers and load generators cannot fill memory, and a forged request without the
/// cookie cannot act. Tags and tokens are compared in constant time.
package struct SessionKeys: Sendable {
    /// The server secret (32 bytes), kept in the data directory so cookies and tokens survive restarts.
    package let secret: [UInt8]
    /// HMAC-SHA256 under `secret`, its key prepared once: a tag or token then costs two SHA-256
    /// blocks, not OpenSSL's one-shot `HMAC()`, which fetches the algorithm and sets up a MAC context
    /// on every call (about 10 µs each, two of them on every first page view).
    let mac: HMACSHA256
    /// Secrets that signed before a rotation (``init(secret:previous:)``): they still verify what they
    /// signed, and sign nothing.
    package let previousSecrets: [[UInt8]]
    let previousMACs: [HMACSHA256]
    /// The signing MAC, then the previous ones.
    var allMACs: [HMACSHA256] { [mac] + previousMACs }
    var signingMAC: HMACSHA256 { mac }

    /// Keys that sign with `secret`, and verify with it and with each of `previous` (the secrets that
    /// signed before a rotation, while what they signed should still be accepted).
    package init(secret: [UInt8], previous: [[UInt8]] = [], secure: Bool = false) {
        self.secret = secret
        sessionCookieName = secure ? "__Host-" + Self.cookieName : Self.cookieName
        mac = HMACSHA256(key: secret)
        previousSecrets = previous
        previousMACs = previous.map { HMACSHA256(key: $0) }
    }

    /// Every secret that verifies, the signing one first.
    package var verifyingSecrets: [[UInt8]] { [secret] + previousSecrets }

    /// The name of the session cookie over plain HTTP.
    package static let cookieName = "livelist_session"
    /// The name of this server's session cookie: with `Secure` cookies `__Host-livelist_session` (a
    /// prefix browsers accept only from this host, over HTTPS, for the whole site), else
    /// ``cookieName``.
    package let sessionCookieName: String

    /// The hex digits of a session id and of its tag.
    package static let idLength = 32
    package static let tagLength = 32

    /// A new session: its id, and the cookie value that carries the id with its tag.
    package func mintSession() -> (id: String, cookie: String) {
        // Minting is on every first page view: the random bytes come from a pool (SessionRandom), and
        // the cookie's hex is written once into one buffer, the id's digits first, then the tag's.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.idLength + Self.tagLength) { text in
            let start = text.baseAddress!
            Self.writeRandomID(to: start)
            let id = String(decoding: UnsafeBufferPointer(start: start, count: Self.idLength), as: UTF8.self)
            writeTag(for: id, to: start + Self.idLength)
            return (id, String(decoding: UnsafeBufferPointer(text), as: UTF8.self))
        }
    }

    /// A new random token of 32 hex digits (16 bytes), such as the one that names an open multiplexed
    /// stream to the requests that change its lists.
    package static func mintToken() -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.idLength) { text in
            writeRandomID(to: text.baseAddress!)
            return String(decoding: UnsafeBufferPointer(text), as: UTF8.self)
        }
    }

    /// Writes 16 fresh random bytes from the pool as ``idLength`` hex digits at `out`.
    private static func writeRandomID(to out: UnsafeMutablePointer<UInt8>) {
        let random = Self.random.next()
        withUnsafeBytes(of: random) { writeHex($0, to: out) }
    }

    /// Where session ids' random bytes come from (one pool per process).
    private static let random = SessionRandom()
    /// What a session id's tag authenticates before the id.
    private static let sessionTagPrefix = Array("livelist-session:".utf8)
    private static let csrfPrefix = Array("livelist-csrf:".utf8)
    private static let revocationPrefix = Array("livelist-revoked-session:".utf8)

    /// What names a session in a revocation that other nodes read (``Revocation/session(_:)``): 32 hex
    /// digits of `HMAC-SHA256(secret, "livelist-revoked-session:" + id)`, the same on every node that
    /// shares the secret, and never the session id itself.
    package func revocationDigest(of session: String) -> String {
        mac.withMAC(of: Self.revocationPrefix, session) { Self.hex($0.prefix(16)) }
    }

    /// The session id that a session cookie's value carries, when the server minted it; nil for any
    /// other value (made up, altered, signed with another secret, or from before tags).
    package func sessionID(fromCookie value: String) -> String? {
        let bytes = Array(value.utf8)
        guard bytes.count == Self.idLength + Self.tagLength, bytes.allSatisfy(Self.isLowercaseHex) else {
            return nil
        }
        let id = String(decoding: bytes[..<Self.idLength], as: UTF8.self)
        let presented = Array(bytes[Self.idLength...])
        for key in [mac] + previousMACs {
            let tag = [UInt8](unsafeUninitializedCapacity: Self.tagLength) { buffer, count in
                Self.writeTag(for: id, with: key, to: buffer.baseAddress!)
                count = Self.tagLength
            }
            if constantTimeEqual(tag, presented) { return id }
        }
        return nil
    }

    /// Whether `id` has the shape of a session id (so that nothing else is ever stored or echoed).
    package static func isSessionID(_ id: String) -> Bool {
        id.utf8.count == idLength && id.utf8.allSatisfy(isLowercaseHex)
    }

    /// The CSRF token of a session.
    package func csrfToken(for sessionID: String) -> String {
        String(decoding: csrfTokenBytes(for: sessionID), as: UTF8.self)
    }

    /// The CSRF token of a session as the bytes a page carries (its hex digits, made without a string).
    package func csrfTokenBytes(for sessionID: String) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 2 * HMACSHA256.digestSize) { buffer, count in
            mac.withMAC(of: Self.csrfPrefix, sessionID) { Self.writeHex($0, to: buffer.baseAddress!) }
            count = 2 * HMACSHA256.digestSize
        }
    }

    /// Whether `token` is the CSRF token of `sessionID` under the signing secret or a previous one,
    /// compared in constant time.
    package func verify(token: String, sessionID: String) -> Bool {
        guard Self.isSessionID(sessionID) else { return false }
        let presented = Array(token.utf8)
        if constantTimeEqual(csrfTokenBytes(for: sessionID), presented) { return true }
        return previousMACs.contains { key in
            let expected = [UInt8](unsafeUninitializedCapacity: 2 * HMACSHA256.digestSize) { buffer, count in
                key.withMAC(of: Self.csrfPrefix, sessionID) { Self.writeHex($0, to: buffer.baseAddress!) }
                count = 2 * HMACSHA256.digestSize
            }
            return constantTimeEqual(expected, presented)
        }
    }

    /// Writes the tag of a session id, the first 16 bytes of its HMAC as hex (`tagLength` digits),
    /// from `out` on. The prefixes keep tags and tokens apart.
    private func writeTag(for id: String, to out: UnsafeMutablePointer<UInt8>) {
        Self.writeTag(for: id, with: mac, to: out)
    }

    private static func writeTag(for id: String, with key: HMACSHA256, to out: UnsafeMutablePointer<UInt8>) {
        key.withMAC(of: sessionTagPrefix, id) { writeHex($0.prefix(tagLength / 2), to: out) }
    }

    private static func isLowercaseHex(_ byte: UInt8) -> Bool {
        (0x30 ... 0x39).contains(byte) || (0x61 ... 0x66).contains(byte)
    }

    package static func hex(_ bytes: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            writeHex(bytes, to: out.baseAddress!)
            return bytes.count * 2
        }
    }

    /// Writes the lowercase hex digits of `bytes`, two per byte, from `out` on.
    private static func writeHex(_ bytes: some Collection<UInt8>, to out: UnsafeMutablePointer<UInt8>) {
        var index = 0
        for byte in bytes {
            out[index] = hexDigit(byte >> 4)
            out[index + 1] = hexDigit(byte & 0x0F)
            index += 2
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 0x30 + nibble : 0x61 + nibble - 10
    }
}

/// HMAC-SHA256 of `message` under `key`, as lowercase hex, by OpenSSL's one-shot `HMAC()`: the
/// reference that ``HMACSHA256`` (what sessions use) is tested against.
package func hmacSHA256(key: [UInt8], message: [UInt8]) -> String {
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

/// Whether two byte strings are equal, in a time that depends only on the length of `given` (what
/// the caller sent, which it knows): never on where they first differ, nor on the length of
/// `expected` (a secret's length must not leak through timing either). For tags, tokens and
/// credentials.
package func constantTimeEqual(_ expected: [UInt8], _ given: [UInt8]) -> Bool {
    // Every byte of `given` is compared with a byte of `expected` (cycled when shorter), and a
    // difference of lengths is one more difference: no early return.
    var difference = UInt64(truncatingIfNeeded: expected.count ^ given.count)
    let count = expected.count
    if count == 0 {
        return given.isEmpty
    }
    var index = 0
    for byte in given {
        difference |= UInt64(expected[index] ^ byte)
        index += 1
        if index == count { index = 0 }
    }
    return difference == 0
}
