#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A sign-in that ended before its cookie expired (a sign-out): every node refuses its cookie afterwards.
///
/// A store keeps it until its cookie would have expired (``ListStore/recordEndedSignIn(_:)``) and hands
/// back the ones still in force at start-up (``ListStore/endedSignIns(now:)``); a shared store also
/// sends it to the other nodes as ``Revocation/signInEnded(_:)``.
public struct EndedSignIn: Sendable, Hashable, Codable {
    /// Names the sign-in: 32 lowercase hex digits (a MAC of its nonce), never the nonce itself.
    public var digest: String
    /// When the sign-in was made, in whole seconds since 1970.
    public var issued: Int
    /// When its cookie expires, in whole seconds since 1970: the store forgets it then.
    public var expires: Int

    /// An ended sign-in named by `digest`, made at `issued`, whose cookie expires at `expires`.
    public init(digest: String, issued: Int, expires: Int) {
        self.digest = digest
        self.issued = issued
        self.expires = expires
    }

    /// Now by the system's clock, in whole seconds since 1970: what stores drop expired ones by.
    static func secondsNow() -> Int {
        Int(time(nil))
    }

    /// The digest's length in hex digits.
    static let digestLength = 32

    /// Whether the digest is 32 lowercase hex digits and the times are in order: what a store keeps.
    package var isWellFormed: Bool {
        digest.utf8.count == Self.digestLength
            && digest.utf8.allSatisfy { (UInt8(ascii: "0") ... UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a") ... UInt8(ascii: "f")).contains($0) }
            && issued >= 0 && expires >= issued
    }

    /// Refuses what a store cannot keep, naming it: a digest that is not 32 lowercase hex digits, or
    /// times out of order. Stores check before they keep anything.
    package func checked() throws(StoreError) -> EndedSignIn {
        guard isWellFormed else {
            let shown = digest.utf8.count <= 64 ? digest : String(digest.prefix(64)) + "…"
            throw StoreError("an ended sign-in must have a digest of 32 lowercase hex digits and expire after it was issued (got \(shown.debugDescription), issued \(issued), expires \(expires))")
        }
        return self
    }

    /// The sign-in as one line of text, `DIGEST ISSUED EXPIRES`: a line of the file store's
    /// `ended-sign-ins`, the subject of a shared store's revocation.
    package var line: String {
        "\(digest) \(issued) \(expires)"
    }

    /// Parses ``line``; nil when `text` is not one.
    package init?(line text: some StringProtocol) {
        let fields = text.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 3, let issued = Int(fields[1]), let expires = Int(fields[2]) else { return nil }
        self.init(digest: String(fields[0]), issued: issued, expires: expires)
        guard isWellFormed else { return nil }
    }
}
