import Synchronization
import LiveListEngine
import LiveListHTTP

/// Rendered pages per list and version, cut where each request's own text goes, so that a page view
/// only joins a few byte arrays into a response whose header fields are already encoded. One entry
/// per list (the newest version), and one for its JSON snapshot. Only lists shown alike to every
/// viewer are kept: their bytes are decided by the list and its version.
///
/// The template is rendered with markers in place of the list's root and of the viewer's CSRF token;
/// the page is cut at the markers, and the root is then written into its places as one opaque piece.
/// The list's content is never searched, so no cell text can be taken for a slot.
final class PageCache: Sendable {
    /// What the template is given for the root and for the token: random per process, never sent, and
    /// made of characters that HTML escaping leaves intact. The colons keep them apart from list names,
    /// the only list text the template itself shows.
    let rootMarker: String
    let csrfMarker: String

    /// Verified session cookies and their tokens.
    let viewers = VerifiedSessions()

    private struct Held {
        /// Entries past which the next store drops those of lists no longer served (doubled after each
        /// sweep, so that sweeps cost O(1) per store).
        var sweepAbove = PageCache.minimumSweep
        var pages: [ListName: (version: Int, parts: PageParts)] = [:]
        /// The gzip of a page's pieces, made on the first request that takes gzip (PageParts has only
        /// token slots left: shared pages).
        var gzipPages: [ListName: (version: Int, gzip: SplicedGzip)] = [:]
        var snapshots: [ListName: (version: Int, bytes: [UInt8], response: PreparedResponse)] = [:]
    }

    private let held = Mutex(Held())
    /// Whether a list of this name is served now: what a sweep keeps.
    private let isServed: @Sendable (ListName) -> Bool
    static let minimumSweep = 64

    init(isServed: @escaping @Sendable (ListName) -> Bool = { _ in true }) {
        self.isServed = isServed
        var generator = SystemRandomNumberGenerator()
        let nonce = SessionKeys.hex((0 ..< 16).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
        rootMarker = "livelist:\(nonce):root:"
        csrfMarker = "livelist:\(nonce):csrf:"
    }

    /// Both markers (for tests that put them in a list).
    var markers: [String] { [rootMarker, csrfMarker] }

    func parts(_ name: ListName, version: Int) -> PageParts? {
        held.withLock { held in
            guard let page = held.pages[name], page.version == version else { return nil }
            return page.parts
        }
    }

    func store(_ name: ListName, version: Int, parts: PageParts) {
        held.withLock { held in
            held.pages[name] = (version, parts)
            sweepIfDue(&held)
        }
    }

    /// Drops every entry of `name`: its list was deleted.
    func forget(_ name: ListName) {
        held.withLock { held in
            held.pages.removeValue(forKey: name)
            held.gzipPages.removeValue(forKey: name)
            held.snapshots.removeValue(forKey: name)
        }
    }

    /// The entries held, over the three tables (for `/metrics` and tests).
    var count: Int {
        held.withLock { $0.pages.count + $0.gzipPages.count + $0.snapshots.count }
    }

    /// Past ``Held/sweepAbove`` entries, drops those of lists no longer served (deleted here or on
    /// another node), so that the cache holds no more than the lists served, whatever names come and go.
    private func sweepIfDue(_ held: inout Held) {
        let entries = held.pages.count + held.gzipPages.count + held.snapshots.count
        guard entries > held.sweepAbove else { return }
        held.pages = held.pages.filter { isServed($0.key) }
        held.gzipPages = held.gzipPages.filter { isServed($0.key) }
        held.snapshots = held.snapshots.filter { isServed($0.key) }
        held.sweepAbove = max(Self.minimumSweep, 2 * (held.pages.count + held.gzipPages.count + held.snapshots.count))
    }

    /// The spliced gzip of `parts`, the page of `name` at `version` whose only slots are tokens.
    func gzip(_ name: ListName, version: Int, parts: PageParts) -> SplicedGzip? {
        if let cached = held.withLock({ held in held.gzipPages[name] }), cached.version == version {
            return cached.gzip
        }
        guard parts.slots.allSatisfy({ $0 == .csrf }), let gzip = SplicedGzip(pieces: parts.pieces) else { return nil }
        held.withLock { held in
            if (held.gzipPages[name]?.version ?? Int.min) < version { held.gzipPages[name] = (version, gzip) }
            sweepIfDue(&held)
        }
        return gzip
    }

    /// The prepared answer for a list's snapshot JSON at `version`, kept under that version and the
    /// very bytes it carries: a list hands out the same buffer for as long as its version stands, and
    /// the entry holds that buffer, so that no other live array can have its address. Any other bytes
    /// or version make a new entry.
    func snapshotResponse(_ name: ListName, version: Int, bytes: [UInt8], make: ([UInt8]) -> PreparedResponse) -> PreparedResponse {
        if let cached = held.withLock({ held in held.snapshots[name] }), cached.version == version, Self.sameBuffer(cached.bytes, bytes) {
            return cached.response
        }
        let response = make(bytes)
        held.withLock { held in
            if (held.snapshots[name]?.version ?? Int.min) <= version { held.snapshots[name] = (version, bytes, response) }
            sweepIfDue(&held)
        }
        return response
    }

    /// The prepared snapshot answer of `name` when it was made at `version` (for the event loop,
    /// which knows the list's version without asking the list).
    func snapshotResponse(_ name: ListName, version: Int) -> PreparedResponse? {
        held.withLock { held in
            guard let cached = held.snapshots[name], cached.version == version else { return nil }
            return cached.response
        }
    }

    /// Whether two arrays share one buffer (so their bytes are equal).
    static func sameBuffer(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in x.baseAddress == y.baseAddress } }
    }

    /// Cuts the template's output at the markers.
    func cut(_ rendered: String) -> PageParts {
        PageParts(rendered: Array(rendered.utf8), markers: [(Array(rootMarker.utf8), .root), (Array(csrfMarker.utf8), .csrf)])
    }
}

/// A page as fixed byte pieces with a slot between each two: `pieces[0] slot[0] pieces[1] … pieces[n]`.
struct PageParts: Sendable {
    enum Slot: Sendable, Equatable {
        case root
        case csrf
    }

    private(set) var pieces: [[UInt8]]
    private(set) var slots: [Slot]
    private let fixedBytes: Int

    init(pieces: [[UInt8]], slots: [Slot]) {
        precondition(pieces.count == slots.count + 1, "a slot lies between two pieces")
        self.pieces = pieces
        self.slots = slots
        fixedBytes = pieces.reduce(0) { $0 + $1.count }
    }

    /// Cuts `rendered` at every occurrence of a marker. The rendered template is small (the list's root
    /// is not in it), so a direct scan will do.
    init(rendered: [UInt8], markers: [(bytes: [UInt8], slot: Slot)]) {
        var pieces: [[UInt8]] = []
        var slots: [Slot] = []
        var pieceStart = 0
        var index = 0
        scan: while index < rendered.count {
            for marker in markers where rendered.count - index >= marker.bytes.count
                && rendered[index] == marker.bytes[0] && rendered[index ..< index + marker.bytes.count].elementsEqual(marker.bytes)
            {
                pieces.append(Array(rendered[pieceStart ..< index]))
                slots.append(marker.slot)
                index += marker.bytes.count
                pieceStart = index
                continue scan
            }
            index += 1
        }
        pieces.append(Array(rendered[pieceStart...]))
        self.init(pieces: pieces, slots: slots)
    }

    /// The same page with `root` written into its root slots, so that only the token's slots remain.
    func filling(root: [UInt8]) -> PageParts {
        var filledPieces: [[UInt8]] = [pieces[0]]
        var filledSlots: [Slot] = []
        for (offset, slot) in slots.enumerated() {
            if slot == .root {
                filledPieces[filledPieces.count - 1] += root
                filledPieces[filledPieces.count - 1] += pieces[offset + 1]
            } else {
                filledSlots.append(slot)
                filledPieces.append(pieces[offset + 1])
            }
        }
        return PageParts(pieces: filledPieces, slots: filledSlots)
    }

    /// The page with every slot filled: one allocation, one copy of each piece.
    func bytes(root: [UInt8], csrf: [UInt8]) -> [UInt8] {
        var count = fixedBytes
        for slot in slots {
            count += slot == .root ? root.count : csrf.count
        }
        var out: [UInt8] = []
        out.reserveCapacity(count)
        out.append(contentsOf: pieces[0])
        for (offset, slot) in slots.enumerated() {
            out.append(contentsOf: slot == .root ? root : csrf)
            out.append(contentsOf: pieces[offset + 1])
        }
        return out
    }
}

/// A request's viewer as the page needs it: its session (nil without a valid cookie) and, with one,
/// the cookie value and the session's CSRF token.
struct PageViewer: Sendable {
    var session: String?
    var token: [UInt8]
}
