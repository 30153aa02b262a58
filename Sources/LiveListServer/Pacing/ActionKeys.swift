import LiveListEngine
import Synchronization

/// The `Idempotency-Key`s of recent actions on this node, scoped to their list and browser session: a
/// page that resends an action whose answer it lost (the client script does, with the key it first
/// sent) gets the first answer again, and the app's handler does not run twice. The last
/// ``capacity`` keys are kept; an action refused or failed keeps none, so that its retry runs.
final class ActionKeys: Sendable {
    static let capacity = 10_000

    enum Begin: Equatable {
        /// Run the action; call ``finish(_:handled:)`` after.
        case run
        /// An action with this key was handled: answer as it was.
        case handled
        /// An action with this key is running now.
        case inFlight
        /// The key came with another action.
        case reused
    }

    private enum Entry {
        case running([UInt8])
        case handled([UInt8])
    }

    private let entries = Mutex(RecentlyKept<Entry>(capacity: capacity))

    /// `list` NUL `session` NUL `key`.
    static func scope(list: String, session: String, key: String) -> String {
        list + "\u{0}" + session + "\u{0}" + key
    }

    /// The keys held now, and the places their order holds (stale ones included): both bounded by
    /// ``capacity`` (the order by twice it), for `/metrics` and tests.
    var held: (keys: Int, places: Int) {
        entries.withLock { ($0.count, $0.placesHeld) }
    }

    func begin(_ scoped: String, fingerprint: [UInt8]) -> Begin {
        entries.withLock { entries in
            switch entries[scoped] {
            case let .running(known)?: return known == fingerprint ? .inFlight : .reused
            case let .handled(known)?: return known == fingerprint ? .handled : .reused
            case nil:
                entries.keep(.running(fingerprint), for: scoped)
                return .run
            }
        }
    }

    /// Records how the action that ``begin(_:fingerprint:)`` let run ended: handled keeps its key,
    /// anything else forgets it.
    func finish(_ scoped: String, handled: Bool) {
        entries.withLock { entries in
            guard case let .running(fingerprint)? = entries[scoped] else { return }
            if handled {
                entries.keep(.handled(fingerprint), for: scoped)
            } else {
                entries.forget(scoped)
            }
        }
    }
}
