import Synchronization
public import LiveListEngine
import LiveListHTTP

/// The app's authentication: who the request's viewer is, or nil for nobody signed in. It runs for
/// every request that reads or acts on a list, and again whenever a stream's access is re-checked
/// (``LiveListApp/revoke(identity:)``, the re-check interval, every reconnect). A throw counts as
/// nobody signed in.
public typealias Authenticate = @Sendable (RequestHead) async throws -> Identity?

/// A list's access rule: what `identity` (nil when nobody is signed in) may do with the list. A rule
/// that throws grants nothing.
public typealias AccessRule = @Sendable (Identity?) async throws -> Access

/// The one place that decides who may view or act on a list (docs/PROTOCOL.md, "Access"). Every route
/// that reads or acts on a list asks it before it looks the list up, so that a refusal never depends
/// on whether the list exists; no cache or second route answers without it (the page cached on the
/// event loop is answered there only for a request the gate allows without awaiting:
/// ``allowsWithoutAwaiting(_:_:)``).
///
/// - Without an `authenticate`, a list without a rule is public, as before apps had users.
/// - With one, a list without a rule is refused.
/// - With a read token, every name without a rule needs the token first (JSON-driven lists, names of
///   no list, and the app's lists that it gave no rule): `Authorization: Bearer TOKEN`, or the cookie
///   of the token sign-in page. Whether it applies never depends on whether a list exists.
final class AccessGate: Sendable {
    private struct Rules {
        var authenticate: Authenticate?
        var perList: [ListName: AccessRule] = [:]
        var signInPath: String?
    }

    /// Who asks: the identity the app's `authenticate` gave, and whether the request carries the read
    /// token.
    struct Subject: Sendable {
        var identity: Identity?
        var isReader: Bool
    }

    enum Verdict: Sendable {
        /// Goes on, with what the rule grants.
        case allowed(Access, Identity?)
        /// Nobody signed in (or no read token) where one is needed: 401, or a page navigation is sent
        /// to the sign-in route. `rule` names what refused, for the log.
        case signInNeeded(rule: String)
        /// Signed in but not allowed: answered exactly as a list that does not exist.
        case denied(rule: String)
    }

    private let rules = Mutex(Rules())
    private let readToken: [UInt8]?
    private let trustedProxies: TrustedProxies
    /// The key of the MACs that the token is compared as.
    private let macKey: [UInt8]
    /// The read token's MAC, made once: checking a token costs one MAC, of the token presented.
    private let readTokenMAC: [UInt8]?
    /// Whether a cookie is a valid sign-in with the read token (made by the token sign-in page, not
    /// expired, not signed out).
    private let isReaderCookie: @Sendable (String) -> Bool
    /// Counts revocations: a stream decided before one is decided again when it starts.
    private let revocations = Mutex(0)

    /// The cookie that the token sign-in page sets.
    static let readerCookieName = "livelist_reader"
    /// Where the bare server's token sign-in page is, when a read token is set, and its sign-out.
    static let tokenSignInPath = "/signin"
    static let tokenSignOutPath = "/signout"

    /// `secret`: the signing session secret.
    init(readToken: String?, secret: [UInt8], trustedProxies: TrustedProxies, isReaderCookie: @escaping @Sendable (String) -> Bool) {
        self.readToken = readToken.map { Array($0.utf8) }
        self.trustedProxies = trustedProxies
        self.isReaderCookie = isReaderCookie
        macKey = secret
        readTokenMAC = self.readToken.map { Array(hmacSHA256(key: secret, message: $0).utf8) }
    }

    /// The number of revocations so far; a stream whose decision came before the current number is
    /// decided again once tracked.
    var revocationCount: Int { revocations.withLock { $0 } }

    func countRevocation() {
        revocations.withLock { $0 += 1 }
    }

    var hasReadToken: Bool { readToken != nil }

    func setAuthenticate(_ authenticate: @escaping Authenticate) {
        rules.withLock { $0.authenticate = authenticate }
    }

    func setRule(_ rule: @escaping AccessRule, for name: ListName) {
        rules.withLock { $0.perList[name] = rule }
    }

    func setSignInPath(_ path: String?) {
        rules.withLock { $0.signInPath = path }
    }

    /// Whether the app authenticates viewers.
    var authenticates: Bool {
        rules.withLock { $0.authenticate != nil }
    }

    /// Where a page navigation refused for want of a viewer goes: the app's sign-in route, else the
    /// token sign-in page when a read token guards the list.
    func signInPath(readTokenRefused: Bool) -> String? {
        if let path = rules.withLock({ $0.signInPath }) { return path }
        return readTokenRefused && readToken != nil ? Self.tokenSignInPath : nil
    }

    /// Whether `request` may view `list`, when that is decided without awaiting: no app
    /// `authenticate` and no rule of the list, so that the read token alone decides (or nothing,
    /// without one). False when it cannot be decided so, or refuses: the request then goes to
    /// ``decide(_:_:)-(HTTPRequest,_)``, which decides the same and answers the refusal. Only a request
    /// this allows may be answered without asking (the page cached on the event loop).
    func allowsWithoutAwaiting(_ request: HTTPRequest, _ list: any ServedList) -> Bool {
        let ruled = rules.withLock { $0.authenticate != nil || $0.perList[list.name] != nil }
        return !ruled && (readToken == nil || isReader(request))
    }

    /// Who asks: runs the app's `authenticate` (a throw is nobody) and checks the read token.
    func subject(_ request: HTTPRequest) async -> Subject {
        let authenticate = rules.withLock { $0.authenticate }
        var identity: Identity?
        if let authenticate {
            identity = try? await authenticate(RequestHead(request, trustedProxies: trustedProxies))
        }
        return Subject(identity: identity, isReader: isReader(request))
    }

    /// What `subject` may do with the list `name`. Allowed means at least viewing; a route that acts
    /// checks the access for ``Access/act`` itself.
    func decide(_ subject: Subject, _ name: ListName) async -> Verdict {
        if readTokenGuards(name), !subject.isReader {
            return .signInNeeded(rule: "read-token")
        }
        let (authenticates, rule) = rules.withLock { ($0.authenticate != nil, $0.perList[name]) }
        let granted: Access
        if let rule {
            granted = (try? await rule(subject.identity)) ?? .none
        } else {
            // No rule: public unless the app authenticates, then refused (deny by mistake).
            granted = authenticates ? .none : .all
        }
        // Acting needs viewing: a rule that grants `act` alone grants nothing.
        if granted.contains(.view) {
            return .allowed(granted, subject.identity)
        }
        if subject.identity == nil, authenticates || rule != nil {
            return .signInNeeded(rule: name.rawValue)
        }
        return .denied(rule: name.rawValue)
    }

    /// Both steps for one list.
    func decide(_ request: HTTPRequest, _ name: ListName) async -> Verdict {
        await decide(await subject(request), name)
    }

    /// Whether the read token guards `name`: set, and the app gave the name no rule (a rule decides
    /// alone). Never whether a list has the name: the answer must not tell.
    private func readTokenGuards(_ name: ListName) -> Bool {
        readToken != nil && rules.withLock { $0.perList[name] == nil }
    }

    /// Whether `text` is the read token. Compared as MACs of equal length, so that the time taken tells
    /// nothing of the token's length.
    func isReadToken(_ text: String) -> Bool {
        guard let readTokenMAC else { return false }
        return constantTimeEqual(readTokenMAC, Array(hmacSHA256(key: macKey, message: Array(text.utf8)).utf8))
    }

    private func isReader(_ request: HTTPRequest) -> Bool {
        guard readToken != nil else { return false }
        if let credentials = request.headers["Authorization"].flatMap(HeaderParsing.bearerCredentials) {
            return isReadToken(String(credentials))
        }
        if let cookie = request.cookie(Self.readerCookieName) {
            return isReaderCookie(cookie)
        }
        return false
    }
}
