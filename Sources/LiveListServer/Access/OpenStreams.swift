import Synchronization
import LiveListEngine
import LiveListHTTP

/// The event streams open on this node, with what their access was decided on: the request's head
/// (to run `authenticate` again), the identity it gave, its session's revocation digest, and the lists
/// still granted.
/// Revocation and the periodic re-check read it; a stream leaves it when it closes.
final class OpenStreams: Sendable {
    final class Entry: Sendable {
        /// The stream's request, without a body (streams have none).
        let request: HTTPRequest
        /// The identity its access was decided for.
        let identity: Identity?
        var identityID: String? { identity?.id }
        /// What names its browser session in a revocation (``SessionKeys/revocationDigest(of:)``),
        /// made once when the stream opens.
        let sessionDigest: String?
        let stream: HTTPStream
        /// The lists the stream is still granted.
        let names: Mutex<[ListName]>

        init(request: HTTPRequest, identity: Identity?, sessionDigest: String?, stream: HTTPStream, names: [ListName]) {
            self.request = request
            self.identity = identity
            self.sessionDigest = sessionDigest
            self.stream = stream
            self.names = Mutex(names)
        }
    }

    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])

    func add(_ entry: Entry) {
        entries.withLock { $0[ObjectIdentifier(entry.stream)] = entry }
    }

    func remove(_ stream: HTTPStream) {
        _ = entries.withLock { $0.removeValue(forKey: ObjectIdentifier(stream)) }
    }

    /// The open streams that `include` selects.
    func select(_ include: (Entry) -> Bool) -> [Entry] {
        entries.withLock { entries in entries.values.filter(include) }
    }

    var count: Int { entries.withLock { $0.count } }
}
