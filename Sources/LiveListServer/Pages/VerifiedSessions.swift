import LiveListEngine
import Synchronization

/// Session cookies already verified, with their session's CSRF token, so that a returning viewer's
/// page view costs no HMAC. Only a value that ``SessionKeys/sessionID(fromCookie:)`` accepted is ever
/// stored, under the exact cookie text; the token is derived from the id as it always is. Bounded:
/// past `capacity` entries the table starts over.
final class VerifiedSessions: Sendable {
    private let entries = Mutex<[String: PageViewer]>([:])
    private let capacity: Int

    init(capacity: Int = 4_096) {
        self.capacity = capacity
    }

    /// The viewer of the cookie value `cookie`, or nil when it does not verify.
    func viewer(cookie: String, keys: SessionKeys) -> PageViewer? {
        if let known = entries.withLock({ $0[cookie] }) {
            return known
        }
        guard let id = keys.sessionID(fromCookie: cookie) else { return nil }
        let viewer = PageViewer(session: id, token: keys.csrfTokenBytes(for: id))
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[cookie] = viewer
        }
        return viewer
    }

    /// Entries held now (for tests).
    var count: Int { entries.withLock { $0.count } }
}
