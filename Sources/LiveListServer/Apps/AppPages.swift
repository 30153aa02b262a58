import Foundation
public import LiveListEngine
public import LiveListHTTP
public import Markup
import Synchronization

/// One page as the app's layout gets it (``LiveListApp/layout(_:)``): its title and content, who views
/// it, and what LiveList needs in the page for the lists it embeds.
///
///     app.layout { page in
///         document {
///             html(.lang("en")) {
///                 head {
///                     meta(.custom("charset", "utf-8"))
///                     title { page.title + " · Desk" }
///                     page.liveListHead
///                     stylesheet("/desk/desk.css")
///                 }
///                 body {
///                     header { nav { a(.href("/tickets")) { "My tickets" } } }
///                     main { page.content }
///                     page.liveListRegions
///                 }
///             }
///         }
///     }
public struct AppPage: Sendable {
    /// The page's title, as the route gave it (a list's own page: its title, else its name).
    public let title: String
    /// The status the page is answered with: 200 for a page, the error's for an error page.
    public let status: HTTPStatus
    /// Who views it (what `authenticate` said), nil for nobody.
    public let identity: Identity?
    /// The path of the request (no query): for navigation that marks where the viewer is.
    public let path: String
    /// The CSRF token of the viewer's browser session, for a form the layout writes (a sign-out button):
    /// its hidden `csrf` field. Empty on an error page answered to a request without a session.
    public let csrfToken: String
    /// The page's own content, rendered.
    public let content: RenderedHTML
    /// What the lists of the page need in its `<head>`: the CSRF token for the script, LiveList's
    /// stylesheet and the deferred script (and the drag script when a list has drag handles). Safe to
    /// write on every page; a page without lists loads the script, which then does nothing.
    public let liveListHead: RenderedHTML
    /// The connection status line and the live region that tells screen readers what changed: write
    /// them once, anywhere in `<body>`.
    public let liveListRegions: RenderedHTML
    /// A message kept for this page by the request before a redirect (``AppRequest/redirect(to:flash:)``), shown
    /// once; nil when there is none.
    public let flash: String?
}

/// The pages of the app's own: its layout, the titles of its lists, and what renders a page in it.
/// Set before the server runs; read by every page.
final class AppPages: Sendable {
    private let layout = Mutex<(@Sendable (AppPage) -> [UInt8])?>(nil)
    private let titles = Mutex<[ListName: String]>([:])
    let gate: AccessGate
    let registry: ListRegistry
    let assets: Assets
    let flashCookie: FlashCookie

    init(gate: AccessGate, registry: ListRegistry, assets: Assets, keys: SessionKeys) {
        self.gate = gate
        self.registry = registry
        self.assets = assets
        flashCookie = FlashCookie(keys: keys)
    }

    func setLayout(_ render: @escaping @Sendable (AppPage) -> [UInt8]) {
        layout.withLock { $0 = render }
    }

    /// Whether the app gave a layout: its pages, its lists' own pages and its error pages use it.
    var hasLayout: Bool { layout.withLock { $0 != nil } }

    func setTitle(_ title: String, for name: ListName) {
        titles.withLock { $0[name] = title }
    }

    /// The title of a list's own page: the one the app gave, else the list's name.
    func listTitle(of name: ListName) -> String {
        titles.withLock { $0[name] } ?? name.rawValue
    }

    /// The whole page: `content` in the app's layout, or in the plain one when the app has none.
    func render(title: String, status: HTTPStatus = .ok, identity: Identity?, path: String, csrfToken: String, flash: String? = nil,
                content: RenderedHTML) -> [UInt8] {
        let drags = content.bytes.firstRange(of: Array("data-drag-action".utf8)) != nil
        let page = AppPage(
            title: title, status: status, identity: identity, path: path, csrfToken: csrfToken, content: content,
            liveListHead: liveListHead(csrfToken: csrfToken, drags: drags), liveListRegions: Self.regions, flash: flash)
        if let layout = layout.withLock({ $0 }) {
            return layout(page)
        }
        return Self.plainLayout(page).renderedBytes()
    }

    private func liveListHead(csrfToken: String, drags: Bool) -> RenderedHTML {
        RenderedHTML {
            meta(.name("livelist-csrf"), .custom("content", csrfToken))
            stylesheet(assets.stylesheetURL)
            script(src: assets.scriptURL)
            if drags {
                script(src: assets.dragScriptURL)
            }
        }
    }

    /// What livelist.js writes to: the connection's state and, for screen readers, what changed.
    static let regions = RenderedHTML {
        p(.id("livelist-status"), .class("livelist-status"), .role("status"))
        div(.id("livelist-news"), .class("visually-hidden"), .aria("live", "polite"))
    }

    /// The layout of an app that gave none: the title, LiveList's head, the content, nothing else.
    @HTMLBuilder
    static func plainLayout(_ page: AppPage) -> some HTML {
        document {
            html(.lang("en")) {
                head {
                    meta(.custom("charset", "utf-8"))
                    meta(.name("viewport"), .custom("content", "width=device-width, initial-scale=1"))
                    meta(.name("color-scheme"), .custom("content", "light dark"))
                    title { page.title }
                    page.liveListHead
                }
                body {
                    main {
                        if let flash = page.flash {
                            p(.class("flash"), .role("status")) { flash }
                        }
                        page.content
                    }
                    page.liveListRegions
                }
            }
        }
    }
}

extension LiveListApp {
    /// The layout of the app's pages: every page a route answers with ``AppRequest/page(title:status:_:)``,
    /// every list's own page (`/lists/NAME`, its list embedded under its title) and every error page
    /// answered to a browser go through it. It gets the page (``AppPage``) and writes the whole
    /// document, typed and escaped as cells are. Without one, pages have a plain layout of their own
    /// and a list's page keeps the server's template.
    public func layout<Layout: HTML & SendableMetatype>(@HTMLBuilder _ layout: @escaping @Sendable (AppPage) -> Layout) {
        services.pages.setLayout { page in layout(page).renderedBytes() }
    }

    /// The title of list `name`'s own page (its `<title>` and heading), in place of its name.
    ///
    /// - Throws: `StartupError` when `name` is not a list name.
    public func setTitle(_ title: String, forList name: String) throws {
        services.pages.setTitle(title, for: try Self.listName(name))
    }
}

extension AppRequest {
    /// A page of the app's own in the app's layout (``LiveListApp/layout(_:)``): `content` is written as
    /// typed HTML, escaped by construction, and may embed live lists (``embed(_:)``).
    ///
    ///     app.route(.GET, "/queue") { request in
    ///         let queue = await request.embed("queue")
    ///         return request.page(title: "Queue") {
    ///             h1 { "Open tickets" }
    ///             queue
    ///         }
    ///     }
    public func page<Content: HTML>(title: String, status: HTTPStatus = .ok, @HTMLBuilder _ content: () -> Content) -> HTTPResponse {
        var response = HTTPResponse.page(
            pages.render(title: title, status: status, identity: identity, path: http.path, csrfToken: csrfToken, flash: flash,
                         content: RenderedHTML(content())),
            status: status)
        if flash != nil {
            response.clearCookie(FlashCookie.name)
        }
        return response
    }
}

extension HTTPResponse {
    /// An HTML page of the app's own from bytes rendered already (``page(_:status:)``'s headers).
    static func page(_ bytes: [UInt8], status: HTTPStatus) -> HTTPResponse {
        var response = HTTPResponse.html(bytes, status: status)
        response.headers.set("Cache-Control", "no-store")
        response.headers.set("Content-Security-Policy", appPageSecurityPolicy)
        response.headers.set("X-Content-Type-Options", "nosniff")
        return response
    }
}
