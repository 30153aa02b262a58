/// Rendered pages per list and version, split around the CSRF token's places, so that a page view
/// only joins the parts with the session's token. One entry per list (the newest version).
final class PageCache: @unchecked Sendable {
    /// Stands in for the token while rendering: letters and digits only, so escaping leaves it intact,
    /// and long enough never to occur in a list.
    static let placeholder = "livelistcsrfplaceholder0d6f2c1e9b8a7f3e5d4c2b1a0f9e8d7c"

    private let lock = Lock()
    private var pages: [ListName: (version: Int, parts: [String])] = [:]

    func parts(_ name: ListName, version: Int) -> [String]? {
        lock.withLock {
            guard let page = pages[name], page.version == version else { return nil }
            return page.parts
        }
    }

    func store(_ name: ListName, version: Int, parts: [String]) {
        lock.withLock { pages[name] = (version, parts) }
    }
}
