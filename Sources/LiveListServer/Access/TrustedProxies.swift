#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveListHTTP
import Synchronization

/// The peers whose `X-Forwarded-For` is believed (``ServerConfiguration/trustedProxies``): addresses
/// (`127.0.0.1`, `::1`) and ranges in CIDR notation (`10.0.0.0/8`, `fd00::/8`), as a reverse proxy in a
/// container network needs. A request from any other peer that carries forwarding headers is a
/// claim, not a fact: it is counted, and logged once an hour at most, so that a proxy left out of the
/// configuration is noticed (every client behind it would share its address, and its budgets).
final class TrustedProxies: Sendable {
    /// One address or range, as bytes (4 for IPv4, 16 for IPv6) and the bits that must match.
    struct Range: Sendable, Equatable {
        var bytes: [UInt8]
        var prefix: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var remaining = prefix
            for index in 0 ..< bytes.count where remaining > 0 {
                let bits = min(8, remaining)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if (address[index] ^ bytes[index]) & mask != 0 { return false }
                remaining -= bits
            }
            return true
        }
    }

    private let ranges: [Range]
    /// The addresses found trusted or not, so that a request costs one look-up (bounded: cleared when full).
    private let known = Mutex<[String: Bool]>([:])
    private let warnings = Mutex<(count: Int, lastLog: ContinuousClock.Instant?)>((0, nil))

    /// Whether any peer is trusted.
    var isEmpty: Bool { ranges.isEmpty }

    /// Parses `entries`.
    ///
    /// - Throws: `StartupError` naming an entry that is neither an address nor a CIDR range.
    init(_ entries: Set<String>) throws(StartupError) {
        var ranges: [Range] = []
        for entry in entries.sorted() {
            guard let range = Self.parse(entry) else {
                throw StartupError("trusted proxy \"\(entry)\" is neither an IP address nor a CIDR range (10.0.0.0/8, fd00::/8)")
            }
            ranges.append(range)
        }
        self.ranges = ranges
    }

    /// Whether `address` (a peer's, as the server writes it) is a trusted proxy.
    func contains(_ address: String) -> Bool {
        guard !ranges.isEmpty, !address.isEmpty else { return false }
        if let found = known.withLock({ $0[address] }) { return found }
        let bytes = Self.bytes(of: address)
        let trusted = bytes.map { bytes in ranges.contains { $0.contains(bytes) } } ?? false
        known.withLock { known in
            if known.count >= 4_096 { known.removeAll(keepingCapacity: true) }
            known[address] = trusted
        }
        return trusted
    }

    /// The client's address: the peer's, or the last address of `X-Forwarded-For` when the peer is a
    /// trusted proxy (the address that proxy saw); nil when unknown.
    func clientAddress(_ request: HTTPRequest) -> String? {
        if contains(request.remoteAddress), let forwarded = request.headers["X-Forwarded-For"],
            let last = forwarded.split(separator: ",").last?.trimmingSpaces, !last.isEmpty
        {
            return String(last)
        }
        return request.remoteAddress.isEmpty ? nil : request.remoteAddress
    }

    /// Requests that carried forwarding headers from a peer not trusted, so far.
    var untrustedForwarded: Int { warnings.withLock { $0.count } }

    /// Counts a request from `peer` that carries forwarding headers although `peer` is not trusted;
    /// returns the line to log when one is due (the first, then at most one an hour).
    func noteUntrustedForwarding(from peer: String, now: ContinuousClock.Instant = .now) -> String? {
        let due = warnings.withLock { state -> Bool in
            state.count += 1
            guard state.lastLog.map({ now - $0 >= .seconds(3_600) }) ?? true else { return false }
            state.lastLog = now
            return true
        }
        guard due else { return nil }
        let shown = String(peer.prefix(64))
        return "requests from \(shown) carry X-Forwarded-For or Forwarded, but \(shown) is not a trusted proxy: every client behind it "
            + "shares its address (in the actions' and sign-ins' pace, and the access log); if it is your reverse proxy, start with "
            + "--trusted-proxy \(shown) (LIVELIST_TRUSTED_PROXIES); logged once an hour at most, counted in livelist_untrusted_forwarded_total"
    }

    /// `ADDRESS` or `ADDRESS/BITS`.
    static func parse(_ entry: String) -> Range? {
        let parts = entry.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let bytes = bytes(of: String(parts[0])) else { return nil }
        var prefix = bytes.count * 8
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isNumber), parts[1].count <= 3,
                let bits = Int(parts[1]), bits <= prefix
            else { return nil }
            prefix = bits
        }
        return Range(bytes: bytes, prefix: prefix)
    }

    /// The bytes of an IPv4 (dotted decimal) or IPv6 address; an IPv4-mapped IPv6 address
    /// (`::ffff:10.0.0.1`) is its IPv4 address. Nil for anything else (names included).
    static func bytes(of address: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0 ..< 10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return Array(bytes[12...])
        }
        return bytes
    }
}
