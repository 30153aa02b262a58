import COpenSSL

/// HMAC-SHA256 (RFC 2104) under one key, with the key's two padded blocks hashed once, at `init`:
/// `H((K ^ opad) || H((K ^ ipad) || message))`, where each call starts from copies of the two
/// prepared SHA-256 states (OpenSSL's digests). A short message then costs two compression rounds
/// and a few copies, where OpenSSL 3's one-shot `HMAC()` fetches the algorithm from
/// its provider and builds a MAC context every time.
///
/// Thread-safe: the prepared states are only read (copied) after `init`, and each call hashes in a
/// context of its own.
final class HMACSHA256: @unchecked Sendable {
    /// SHA-256's block size and digest size, in bytes.
    static let blockSize = 64
    static let digestSize = 32

    private let inner: OpaquePointer
    private let outer: OpaquePointer

    init(key: [UInt8]) {
        // A key longer than a block is replaced by its hash; a shorter one is padded with zeros.
        var block = key.count > Self.blockSize ? Self.sha256(key) : key
        block += [UInt8](repeating: 0, count: Self.blockSize - block.count)
        inner = Self.state(after: block.map { $0 ^ 0x36 })
        outer = Self.state(after: block.map { $0 ^ 0x5C })
    }

    deinit {
        EVP_MD_CTX_free(inner)
        EVP_MD_CTX_free(outer)
    }

    /// The 32-byte HMAC of `message`.
    func authenticate(_ message: [UInt8]) -> [UInt8] {
        withMAC(of: message, "") { Array($0) }
    }

    /// Gives `body` the 32-byte HMAC of `prefix` followed by `text`'s UTF-8. The message is hashed in
    /// its two parts and the digests stay on the stack: a tag or token costs no array of its own.
    func withMAC<Result>(of prefix: [UInt8], _ text: String, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        guard let context = EVP_MD_CTX_new() else { Self.failed("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        return withUnsafeTemporaryAllocation(byteCount: 2 * Self.digestSize, alignment: 1) { scratch in
            let innerHash = UnsafeMutableRawBufferPointer(rebasing: scratch[0 ..< Self.digestSize])
            let digest = UnsafeMutableRawBufferPointer(rebasing: scratch[Self.digestSize...])
            Self.check(EVP_MD_CTX_copy_ex(context, inner), "EVP_MD_CTX_copy_ex")
            prefix.withUnsafeBytes { Self.update(context, $0) }
            var text = text
            text.withUTF8 { Self.update(context, UnsafeRawBufferPointer($0)) }
            Self.finish(context, into: innerHash)
            Self.check(EVP_MD_CTX_copy_ex(context, outer), "EVP_MD_CTX_copy_ex")
            Self.update(context, UnsafeRawBufferPointer(innerHash))
            Self.finish(context, into: digest)
            return body(UnsafeRawBufferPointer(digest))
        }
    }

    /// A SHA-256 context that has hashed `block`.
    private static func state(after block: [UInt8]) -> OpaquePointer {
        guard let context = EVP_MD_CTX_new() else { failed("EVP_MD_CTX_new") }
        check(EVP_DigestInit_ex(context, EVP_sha256(), nil), "EVP_DigestInit_ex")
        block.withUnsafeBytes { update(context, $0) }
        return context
    }

    private static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        let context = state(after: bytes)
        defer { EVP_MD_CTX_free(context) }
        return [UInt8](unsafeUninitializedCapacity: digestSize) { buffer, count in
            finish(context, into: UnsafeMutableRawBufferPointer(buffer))
            count = digestSize
        }
    }

    private static func update(_ context: OpaquePointer, _ bytes: UnsafeRawBufferPointer) {
        check(EVP_DigestUpdate(context, bytes.baseAddress, bytes.count), "EVP_DigestUpdate")
    }

    /// Writes the digest into `digest`, which holds exactly `digestSize` bytes.
    private static func finish(_ context: OpaquePointer, into digest: UnsafeMutableRawBufferPointer) {
        var length: UInt32 = 0
        check(EVP_DigestFinal_ex(context, digest.baseAddress?.assumingMemoryBound(to: UInt8.self), &length), "EVP_DigestFinal_ex")
        precondition(length == UInt32(digestSize), "SHA-256 gave \(length) bytes")
    }

    /// OpenSSL's digest calls fail only when memory runs out or the library is broken: nothing a
    /// request could cause, and nothing to answer without the session secret's MAC.
    private static func check(_ status: Int32, _ call: StaticString) {
        if status != 1 { failed(call) }
    }

    private static func failed(_ call: StaticString) -> Never {
        fatalError("OpenSSL's \(call) failed: SHA-256 is unavailable")
    }
}
