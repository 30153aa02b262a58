import LiveListHTML
import Synchronization

/// The renders of an app's own `Renderer` that a hosted list serves
/// (``ListRegistry/hostApp(_:serving:onError:)``), waiting for the list's ordered write path.
///
/// The renderer posts each successful render from inside its lock, so the renders wait here in the
/// order their sections were set, whatever threads rendered them. The list takes them all at once and
/// renders them one by one on its actor, without suspending: nothing is reordered, skipped or
/// rendered twice.
final class ServedRenders: Sendable {
    /// One render of the app's renderer: its sections, with the adapter and updater options it had.
    struct Render: Sendable {
        var sections: [Section]
        var adapter: HTMLAdapter
        var options: UpdaterOptions
    }

    private let pending = Mutex<[Render]>([])
    /// Hears why a render could not be served (the store could not reserve its version, say).
    let onError: (@Sendable (any Error) -> Void)?

    init(onError: (@Sendable (any Error) -> Void)?) {
        self.onError = onError
    }

    /// Adds a render after the others.
    ///
    /// - Returns: whether it is the first waiting: then the caller asks the list to take them.
    func post(_ render: Render) -> Bool {
        pending.withLock { pending in
            pending.append(render)
            return pending.count == 1
        }
    }

    /// Every render waiting, in order; none wait afterwards.
    func takeAll() -> [Render] {
        pending.withLock { pending in
            defer { pending = [] }
            return pending
        }
    }
}
