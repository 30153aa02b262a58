public import LiveListHTML

/// Who owns a list's content.
public enum ListOwner: Sendable, Equatable {
    /// Swift code renders it; writes over HTTP are refused (409).
    case app
    /// `PUT` and `DELETE` drive it.
    case json
}

/// A list being served, of any kind: what every kind answers.
///
/// Each kind is a type of its own, with its own write path and only the calls it can answer:
/// ``AppList`` (Swift code renders it, ``AppList/render(_:)-([Section])``), ``StateList`` (the store
/// keeps its state, ``StateList/updateState(_:_:)``), ``PerViewerList`` (rendered for each viewer,
/// ``PerViewerList/refresh()``) and ``JSONList`` (`PUT` and `DELETE` drive it). Each is an actor: the
/// list's one ordered write path. Every write runs on it from start to end without suspending, in this
/// order: check the precondition, take the next version, render, persist durably, then publish to
/// readers and streams. A write that fails to persist leaves the list as it was.
public protocol HostedList: Actor {
    /// The list's name.
    nonisolated var name: ListName { get }
    /// Who owns its content.
    nonisolated var owner: ListOwner { get }
    /// Whether the list exists, readable without awaiting (a JSON list not created yet or deleted does
    /// not): readers that see `true` see every write acknowledged before.
    nonisolated var exists: Bool { get }
    /// Whether the list renders per viewer (its pages cannot be shared).
    nonisolated var rendersPerViewer: Bool { get }
    /// The current version.
    var version: Int { get }
    /// The number of open streams viewing this list.
    var viewerCount: Int { get }
    /// The current state in snapshot form (with the PUT body for JSON lists), as `viewer` sees it.
    func snapshot(for viewer: Viewer) -> ListSnapshot
}

extension HostedList {
    /// The current state in snapshot form, as a viewer without a session sees it.
    public func snapshot() -> ListSnapshot {
        snapshot(for: .anonymous)
    }
}

/// A list that Swift code renders (``AppList``, ``StateList``, ``PerViewerList``): it hears the
/// browser events of its pages.
public protocol AppHostedList: HostedList {
    /// Sets what the list does with browser events: selections, visibility changes and form actions
    /// (`POST /lists/NAME/actions`). Selections also reach the adapter's `didSelect`, visibility changes
    /// the component's `contentWillDisplay()`/`contentDidEndDisplay()`. A handler that throws an
    /// ``ActionRefusal`` refuses the action (422, with its code and detail); any other error it
    /// throws is the server's fault (500, logged).
    func onAction(_ handler: @escaping @Sendable (ListAction) async throws -> Void)

    /// Sets what the list does with browser events, as ``onAction(_:)``, for an app that declares its
    /// action types: an action of another type, or about a cell the list does not show, is refused
    /// (422) and `handler` never hears it. Selections and visibility changes that the list handles
    /// itself are still passed on.
    func onAction(accepting types: @escaping @Sendable (String) -> Bool, _ handler: @escaping @Sendable (ListAction) async throws -> Void)
}
