import Synchronization
import COpenSSL
import CZlib

/// Compressed bodies by a key that decides them, bounded in bytes; the least recently used go
/// first. Every operation is O(1): entries sit in a slab, linked in use order, found by hashing.
final class CompressionCache: @unchecked Sendable {
    /// What decides a compressed body (the encoding and level are the cache's own).
    struct Key: Hashable {
        enum Source: Hashable {
            /// A name given by the response's builder (`HTTPResponse.compressionKey`).
            case named(String)
            /// The SHA-256 of the uncompressed body.
            case content(SIMD32<UInt8>)
        }

        var source: Source
        /// The uncompressed length: a named entry is never used for a body of another size.
        var length: Int
    }

    private struct Slot {
        var key: Key
        var value: [UInt8]
        var newer = -1
        var older = -1
    }

    private struct State {
        var index: [Key: Int] = [:]
        var slots: [Slot] = []
        var free: [Int] = []
        var newest = -1
        var oldest = -1
        var bytes = 0
        var hits = 0
        var misses = 0

        mutating func unlink(_ slot: Int) {
            let (newer, older) = (slots[slot].newer, slots[slot].older)
            if newer >= 0 { slots[newer].older = older } else { newest = older }
            if older >= 0 { slots[older].newer = newer } else { oldest = newer }
            slots[slot].newer = -1
            slots[slot].older = -1
        }

        mutating func pushNewest(_ slot: Int) {
            slots[slot].older = newest
            slots[slot].newer = -1
            if newest >= 0 { slots[newest].newer = slot }
            newest = slot
            if oldest < 0 { oldest = slot }
        }

        mutating func remove(_ slot: Int) {
            unlink(slot)
            index.removeValue(forKey: slots[slot].key)
            bytes -= slots[slot].value.count
            slots[slot].value = []
            free.append(slot)
        }
    }

    private let lock = Mutex(State())
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    func get(_ key: Key) -> [UInt8]? {
        lock.withLock { state in
            guard let slot = state.index[key] else {
                state.misses += 1
                return nil
            }
            state.hits += 1
            state.unlink(slot)
            state.pushNewest(slot)
            return state.slots[slot].value
        }
    }

    func put(_ key: Key, _ value: [UInt8]) {
        guard value.count <= limit else { return }
        lock.withLock { state in
            if let existing = state.index[key] { state.remove(existing) }
            while state.bytes + value.count > limit, state.oldest >= 0 {
                state.remove(state.oldest)
            }
            let slot: Int
            if let reused = state.free.popLast() {
                slot = reused
                state.slots[slot] = Slot(key: key, value: value)
            } else {
                slot = state.slots.count
                state.slots.append(Slot(key: key, value: value))
            }
            state.index[key] = slot
            state.bytes += value.count
            state.pushNewest(slot)
        }
    }

    /// Lookups that found an entry, and those that did not (for tests).
    var counts: (hits: Int, misses: Int) { lock.withLock { ($0.hits, $0.misses) } }
}

/// A body made of fixed pieces with bytes of each request between them (a page and its viewer's
/// token), gzipped without compressing the pieces again: each piece is deflated once on its own,
/// ending on a byte boundary (a sync flush, no reference into other bytes), the bytes between them go
/// in as stored blocks, and the CRC-32 is joined from the pieces' own (`crc32_combine`). Any gzip
/// decoder reads the result as the body's bytes.
package struct SplicedGzip: Sendable {
    /// Each piece deflated (raw); the last one ends with the final block.
    private let deflated: [[UInt8]]
    private let crcs: [UInt]
    private let lengths: [Int]

    /// Compresses `pieces` (at least one); nil if zlib fails.
    package init?(pieces: [[UInt8]], level: Int32 = 6) {
        guard !pieces.isEmpty else { return nil }
        var deflated: [[UInt8]] = []
        for (index, piece) in pieces.enumerated() {
            guard let raw = rawDeflate(piece, level: level, final: index == pieces.count - 1) else { return nil }
            deflated.append(raw)
        }
        self.deflated = deflated
        crcs = pieces.map { piece in piece.withUnsafeBufferPointer { UInt(crc32(0, $0.baseAddress, uInt($0.count))) } }
        lengths = pieces.map(\.count)
    }

    /// The gzip of `pieces[0] fillers[0] pieces[1] … pieces[n]`; `fillers` has one entry fewer than the pieces.
    package func gzip(fillers: [[UInt8]]) -> [UInt8] {
        precondition(fillers.count == deflated.count - 1, "one filler between each two pieces")
        var size = 18
        for piece in deflated { size += piece.count }
        for filler in fillers { size += filler.count + 5 * (filler.count / 65_535 + 1) }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        // The member header: deflate, no name, no time, unknown extra flags, Unix.
        out.append(contentsOf: [0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03])
        var crc = crcs[0]
        var total = lengths[0]
        out.append(contentsOf: deflated[0])
        for (index, filler) in fillers.enumerated() {
            appendStored(filler, to: &out)
            crc = filler.withUnsafeBufferPointer { UInt(crc32(uLong(crc), $0.baseAddress, uInt($0.count))) }
            out.append(contentsOf: deflated[index + 1])
            crc = UInt(crc32_combine(uLong(crc), uLong(crcs[index + 1]), off_t(lengths[index + 1])))
            total += filler.count + lengths[index + 1]
        }
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: crc >> UInt(shift))) }
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: total >> shift)) }
        return out
    }

    /// `bytes` as stored (uncompressed) blocks, none final, each at most 65,535 bytes.
    private func appendStored(_ bytes: [UInt8], to out: inout [UInt8]) {
        var start = 0
        repeat {
            let count = min(65_535, bytes.count - start)
            out.append(0x00)  // BFINAL 0, BTYPE 00; the rest of the byte is padding
            out.append(UInt8(count & 0xFF))
            out.append(UInt8(count >> 8))
            out.append(UInt8(~count & 0xFF))
            out.append(UInt8((~count >> 8) & 0xFF))
            out.append(contentsOf: bytes[start ..< start + count])
            start += count
        } while start < bytes.count
    }
}

/// Raw deflate (no header or trailer) of `bytes`: ending with the final block when `final`, otherwise
/// with a sync flush (byte-aligned, more blocks may follow). Nil if zlib fails.
private func rawDeflate(_ bytes: [UInt8], level: Int32, final: Bool) -> [UInt8]? {
    var stream = z_stream()
    guard deflateInit2_(&stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
        return nil
    }
    defer { deflateEnd(&stream) }
    return deflateAll(&stream, bytes, flush: final ? Z_FINISH : Z_SYNC_FLUSH)
}
