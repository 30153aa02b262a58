/// Who views a list: the browser session, when the page set one. A list whose render reads the viewer
/// (``ListRegistry/hostApp(_:configuration:perViewer:)``) renders once per viewing stream instead of once per version.
public struct Viewer: Sendable, Hashable {
    /// The session id of the viewer's browser, or nil (curl, a first page view, a crawler).
    public var session: String?
    /// Who the app's `authenticate` says the viewer is; nil when signed out or when the app has none.
    public var identity: Identity?

    public init(session: String?, identity: Identity? = nil) {
        self.session = session
        self.identity = identity
    }

    /// A viewer without a session.
    public static let anonymous = Viewer(session: nil)
}
