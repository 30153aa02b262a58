import Foundation
import LiveListEngine
import LiveListHTTP
import Synchronization

/// How the library signs viewers in (``LiveListApp/useSignIn(_:)``).
public struct SignInSettings: Sendable, Equatable {
    /// How long a sign-in lasts. Default 12 hours.
    public var lifetime: Duration = .seconds(12 * 3_600)
    /// Wrong attempts per account: this many at once, then this rate (per second). Attempts from a
    /// browser that signed in to the account before (its device cookie) count on that browser alone,
    /// so that nobody can keep an account's owner out by failing on purpose. Default 10 at once, then
    /// one every 30 seconds.
    public var failurePace = ActionPace(rate: 1.0 / 30, burst: 10)
    /// How long a browser is remembered as one that signed in to an account (its device cookie).
    /// Default 180 days.
    public var deviceLifetime: Duration = .seconds(180 * 86_400)
    /// The most ended sign-ins a node keeps in memory; past it the oldest sign-ins must sign in again.
    /// Default 100,000.
    public var maximumEndedSignIns = 100_000

    public init() {}
}

/// A sign-in cookie's content once its tag verified.
struct SignedIn: Sendable {
    /// The identity's JSON (base64url) for a user; `reader:TAG` for the read token's sign-in.
    var subject: String
    var issued: Int
    var expires: Int
    /// 32 hex digits, random per sign-in.
    var nonce: String
}

/// Sign-in cookies (made, verified, ended on every node) and the pace of wrong attempts per account.
///
/// A cookie is `v1.SUBJECT.ISSUED.EXPIRES.NONCE.TAG`: the tag is the HMAC of everything before it under
/// the session secret and a purpose (a user's sign-in, the read token's, a device), so a cookie of one
/// kind never passes as another. A sign-out records the sign-in (a MAC of its nonce, never the nonce)
/// among the ended ones until it would have expired: in memory for an O(1) check, in the store for the
/// other nodes and restarts.
final class SignIns: Sendable {
    let keys: SessionKeys
    let store: any ListStore
    private let settingsBox: Mutex<SignInSettings>
    let ended: EndedSignIns
    private let failures: Mutex<ActionPacer>
    /// Cookies whose tag verified, with what they carry: a returning viewer costs no MAC (bounded:
    /// emptied when full). Expiry and ending are checked on every use.
    private let verified = Mutex<[String: SignedIn]>([:])

    /// Purposes of the tags.
    static let userPurpose = "signin"
    static let readerPurpose = "reader"
    static let devicePurpose = "device"

    /// Whether cookies are `Secure` (their names then carry the `__Host-` prefix).
    let secure: Bool

    init(keys: SessionKeys, store: any ListStore, secure: Bool = false, settings: SignInSettings = SignInSettings()) {
        self.keys = keys
        self.secure = secure
        self.store = store
        settingsBox = Mutex(settings)
        ended = EndedSignIns(capacity: settings.maximumEndedSignIns)
        failures = Mutex(ActionPacer(pace: settings.failurePace))
    }

    var settings: SignInSettings {
        get { settingsBox.withLock { $0 } }
        set {
            settingsBox.withLock { $0 = newValue }
            failures.withLock { $0 = ActionPacer(pace: newValue.failurePace) }
        }
    }

    static func now() -> Int { Int(Date().timeIntervalSince1970) }

    // MARK: - Cookies

    /// A new cookie for `subject`, valid for `lifetime` from now.
    func mint(_ subject: String, purpose: String, lifetime: Duration, now: Int = SignIns.now()) -> (value: String, signedIn: SignedIn) {
        let expires = now + Int(lifetime.components.seconds)
        let signedIn = SignedIn(subject: subject, issued: now, expires: expires, nonce: SessionKeys.mintToken())
        let body = "v1.\(subject).\(now).\(expires).\(signedIn.nonce)"
        return (body + "." + keys.tag(purpose, body), signedIn)
    }

    /// What a cookie of `purpose` carries when its tag verifies, it has not expired and its sign-in
    /// has not ended; nil otherwise.
    func valid(_ value: String, purpose: String, now: Int = SignIns.now()) -> SignedIn? {
        guard let signedIn = verifiedTag(value, purpose: purpose), signedIn.expires > now,
            !ended.hasEnded(digest(of: signedIn), issued: signedIn.issued)
        else { return nil }
        return signedIn
    }

    /// What a cookie of `purpose` carries when its tag verifies (expired or ended or not).
    private func verifiedTag(_ value: String, purpose: String) -> SignedIn? {
        let cacheKey = purpose + " " + value
        if let known = verified.withLock({ $0[cacheKey] }) { return known }
        // A cookie is a few hundred bytes; anything far longer is no cookie of ours.
        guard value.utf8.count <= 4_096 else { return nil }
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0] == "v1", let issued = Int(parts[2]), let expires = Int(parts[3]), SessionKeys.isSessionID(String(parts[4]))
        else { return nil }
        let body = parts[0 ..< 5].joined(separator: ".")
        guard keys.verifies(String(parts[5]), purpose, body) else { return nil }
        let signedIn = SignedIn(subject: String(parts[1]), issued: issued, expires: expires, nonce: String(parts[4]))
        verified.withLock { verified in
            if verified.count >= 4_096 { verified.removeAll(keepingCapacity: true) }
            verified[cacheKey] = signedIn
        }
        return signedIn
    }

    /// What names a sign-in among the ended ones: a MAC of its nonce.
    func digest(of signedIn: SignedIn) -> String {
        keys.tag("ended-signin", signedIn.nonce)
    }

    /// The subject of a sign-in with the read token `token`: a new token ends every such sign-in.
    static func readerSubject(token: String, keys: SessionKeys) -> String {
        "reader:" + keys.tag("reader-token", token)
    }

    // MARK: - Identities in cookies

    private struct CodedIdentity: Codable {
        var id: String
        var name: String
        var roles: [String]
        var claims: [String: String]
    }

    /// An identity as a cookie's subject: its JSON in base64url.
    static func subject(of identity: Identity) -> String {
        let coded = CodedIdentity(id: identity.id, name: identity.name, roles: identity.roles.sorted(), claims: identity.claims)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = (try? encoder.encode(coded)) ?? Data()
        return Base64URL.encode(data)
    }

    /// The identity a cookie's subject carries.
    static func identity(ofSubject subject: String) -> Identity? {
        guard let data = Base64URL.decode(subject), let coded = try? JSONDecoder().decode(CodedIdentity.self, from: data) else { return nil }
        return Identity(id: coded.id, name: coded.name, roles: Set(coded.roles), claims: coded.claims)
    }

    // MARK: - Wrong attempts

    /// The key of an account's (or a remembered browser's) failure bucket: a MAC of the account, so
    /// that a key's length never follows what a client sent.
    func failureKeys(account: String, device: String?) -> [String] {
        let accountTag = keys.tag("account", account)
        if let device, let signedIn = valid(device, purpose: Self.devicePurpose), signedIn.subject == accountTag {
            return ["d:" + signedIn.nonce]
        }
        return ["u:" + accountTag]
    }

    /// Seconds to wait before the next attempt on these keys, or nil when one may be made now.
    func waitBeforeAttempt(_ keys: [String]) -> Int? {
        failures.withLock { $0 }.wait(keys)
    }

    /// Counts a wrong attempt.
    func failed(_ keys: [String]) {
        failures.withLock { $0 }.charge(keys)
    }

    /// The device cookie of a browser that signed in to `account`.
    func deviceCookie(account: String) -> String {
        mint(keys.tag("account", account), purpose: Self.devicePurpose, lifetime: settings.deviceLifetime).value
    }

    /// Failure buckets held (bounded by the pacer).
    var failureBuckets: Int { failures.withLock { $0 }.count }

    /// The sign-in cookie's name: `__Host-livelist_signin` when cookies are `Secure` (a prefix that
    /// browsers accept only from this host, over HTTPS, for the whole site), else `livelist_signin`.
    var signInCookieName: String { secure ? "__Host-livelist_signin" : "livelist_signin" }

    /// The cookie that remembers a browser that signed in to an account.
    var deviceCookieName: String { secure ? "__Host-livelist_device" : "livelist_device" }

    /// Gives the browser a new session in `response`, and ends the streams of the one it had.
    func rotateSession(of request: HTTPRequest, in response: inout HTTPResponse, cookies: SessionCookies, streams: StreamAccess) {
        if let old = keys.session(from: request) {
            streams.endStreams(ofSessions: [keys.revocationDigest(of: old)])
        }
        let (_, cookie) = keys.mintSession()
        response.headers.add("Set-Cookie", cookies.setCookie(cookie))
    }

    // MARK: - Ending

    /// Ends `signedIn` on this node at once, then keeps it in the store (and so on every node);
    /// throws when the store could not keep it.
    func end(_ signedIn: SignedIn) async throws(StoreError) {
        let record = EndedSignIn(digest: digest(of: signedIn), issued: signedIn.issued, expires: signedIn.expires)
        ended.add([record], now: Self.now())
        let store = self.store
        if case let .failure(error) = await offThePool({ () throws(StoreError) in try store.recordEndedSignIn(record) }) {
            throw error
        }
    }
}
