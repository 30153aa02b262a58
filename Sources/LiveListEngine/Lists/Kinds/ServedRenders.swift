import LiveListHTML
import Synchronization

/// The renders of an app's own `Renderer` that a hosted list serves
/// (``ListRegistry/hostApp(_:serving:onError:)``), waiting for the list's ordered write path.
///
/// The renderer posts each successful render from inside its lock, so the renders wait here in the
/// order their sections were set, whatever threads rendered them. The list takes them all at once and
/// renders them one by one on its actor, without suspending: nothing is reordered or rendered twice.
///
/// At most ``capacity`` renders wait. An app that renders faster than the list can serve (its
/// renders keep coming while the list's store or streams are slow) never blocks and never grows the
/// queue: past the capacity, a new render takes the place of the newest one waiting, so the list goes
/// straight to it and always ends at the renderer's latest sections. The render replaced is never
/// shown, and the app hears it (``takeAll()`` counts them; the list reports `renders_coalesced` to
/// the host's `onError`).
final class ServedRenders: Sendable {
    /// The most renders waiting.
    static let capacity = 256

    /// One render of the app's renderer: its sections, with the adapter and updater options it had.
    struct Render: Sendable {
        var sections: [Section]
        var adapter: HTMLAdapter
        var options: UpdaterOptions
    }

    private let pending = Mutex<(renders: [Render], replaced: Int)>(([], 0))
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
            if pending.renders.count >= Self.capacity {
                pending.renders[pending.renders.count - 1] = render
                pending.replaced += 1
                return false
            }
            pending.renders.append(render)
            return pending.renders.count == 1
        }
    }

    /// Every render waiting, in order, and how many were replaced by a later one while they waited;
    /// none wait afterwards.
    func takeAll() -> (renders: [Render], replaced: Int) {
        pending.withLock { pending in
            defer { pending = ([], 0) }
            return pending
        }
    }
}
