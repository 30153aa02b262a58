import COpenSSL
import Synchronization

/// The random bytes of new session ids: drawn from OpenSSL's private DRBG (`RAND_priv_bytes`, the
/// generator OpenSSL keeps for secrets, seeded from the kernel) 4 KiB at a time and handed out 16
/// bytes per session, each byte once. A first page view mints a session, and a system call (or a
/// trip through OpenSSL's provider and locks) per view cost more than the rest of minting; this
/// costs one of either per 256 sessions.
///
/// Bytes are zeroed as they are handed out, so the pool never holds an id already given. Should the
/// DRBG ever fail, the pool is filled from the system generator instead (`getrandom`).
final class SessionRandom: Sendable {
    /// The bytes of one session id.
    static let idBytes = 16
    private static let poolBytes = 4_096

    private struct Pool {
        var bytes: [UInt8]
        var next: Int
    }

    private let pool = Mutex(Pool(bytes: [UInt8](repeating: 0, count: SessionRandom.poolBytes), next: SessionRandom.poolBytes))

    /// Sixteen fresh random bytes, as two words.
    func next() -> (UInt64, UInt64) {
        pool.withLock { pool in
            if pool.next + Self.idBytes > pool.bytes.count {
                Self.refill(&pool.bytes)
                pool.next = 0
            }
            let start = pool.next
            pool.next += Self.idBytes
            return pool.bytes.withUnsafeMutableBytes { buffer in
                let words = (buffer.loadUnaligned(fromByteOffset: start, as: UInt64.self),
                             buffer.loadUnaligned(fromByteOffset: start + 8, as: UInt64.self))
                for index in start ..< start + Self.idBytes { buffer[index] = 0 }
                return words
            }
        }
    }

    private static func refill(_ bytes: inout [UInt8]) {
        let drawn = bytes.withUnsafeMutableBufferPointer { RAND_priv_bytes($0.baseAddress, Int32($0.count)) }
        guard drawn != 1 else { return }
        var generator = SystemRandomNumberGenerator()
        bytes.withUnsafeMutableBytes { buffer in
            for offset in stride(from: 0, to: buffer.count, by: 8) {
                buffer.storeBytes(of: generator.next() as UInt64, toByteOffset: offset, as: UInt64.self)
            }
        }
    }
}
