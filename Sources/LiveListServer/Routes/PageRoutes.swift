import Foundation
import LiveListEngine
import LiveListHTML
import LiveListHTTP
import Markup

/// `GET /` and `GET /lists/NAME`: the index of the lists a viewer may see, and a list's page (complete
/// without JavaScript) or its snapshot as JSON. The common answers cost no rendering and no header
/// encoding (``PageCache``).
struct PageRoutes: Sendable {
    let registry: ListRegistry
    let gate: AccessGate
    let listAccess: ListAccess
    let keys: SessionKeys
    let cookies: SessionCookies
    let pageCache: PageCache
    let assets: Assets
    /// The app's layout and its lists' titles.
    let appPages: AppPages

    /// `GET /`: the index page of the lists being served.
    func index(_ request: HTTPRequest) async -> HTTPResponse {
        var lists: [[String: Any]] = []
        let subject = await gate.subject(request)
        for name in await registry.names() {
            // Only what the viewer may view.
            guard case .allowed = await gate.decide(subject, name), let list = registry.existingList(name) else { continue }
            let snapshot = await list.snapshot()
            lists.append([
                "name": name.rawValue,
                "version": snapshot.version,
                "cells": snapshot.rendering.cellCount,
                "sections": snapshot.rendering.sections.count,
                "owner": list.owner == .app ? "app" : "json",
            ])
        }
        let html = assets.templates.render("index", ["lists": lists, "stylesheet": assets.stylesheetURL, "siteStylesheet": assets.siteStylesheetURL, "hasLists": !lists.isEmpty])
        var response = HTTPResponse.html(Array(html.utf8))
        response.headers.set("Cache-Control", "no-store")
        response.headers.set("Content-Security-Policy", Self.pageSecurityPolicy)
        response.headers.set("X-Content-Type-Options", "nosniff")
        return response
    }

    /// `GET /lists/NAME`: the page, rendered server-side (complete without JavaScript), or the snapshot
    /// as JSON when `Accept` ranks JSON above HTML.
    ///
    /// The common answers cost no rendering and no header encoding: the JSON snapshot is answered
    /// from a ``PreparedResponse`` kept per list and version (both encodings), and the page from its
    /// cut template (PageCache) with the viewer's token joined in, under header fields encoded once.
    func page(_ request: HTTPRequest) async -> HTTPResponse {
        let list: any ServedList
        let identity: Identity?
        switch await listAccess.guardedList(request, navigable: true) {
        case let .success(found): (list, identity) = (found.list, found.identity)
        case let .failure(answer): return answer.response
        }
        if request.prefersJSON {
            let viewer = request.cookie(keys.sessionCookieName).flatMap { pageCache.viewers.viewer(cookie: $0, keys: keys) }
            let (version, bytes) = await list.versionedSnapshotJSON(for: Viewer(session: viewer?.session, identity: identity))
            if list.rendersPerViewer {
                return Self.snapshotResponse(bytes)
            }
            return pageCache.snapshotResponse(list.name, version: version, bytes: bytes) { PreparedResponse(Self.snapshotResponse($0)) }
                .response(for: request)
        }
        let (viewer, setCookie) = pageViewer(request)
        if appPages.hasLayout {
            return await pageInLayout(request, list: list, identity: identity, viewer: viewer, setCookie: setCookie)
        }
        if let key = request.queryValue("at") {
            // A page that starts at a cell of a windowed list: rendered for this request alone (its
            // bytes depend on the key), never cached.
            guard let (html, version) = await list.pageHTML(for: Viewer(session: viewer.session, identity: identity), at: key) else {
                return errorResponse(.notFound, "list \(list.name) has no cell \(quoted(key))")
            }
            let parts = renderPage(list, version: version)
            return pageAnswer(request, list: list, version: version, parts: parts, root: Array(html.utf8), viewer: viewer, setCookie: setCookie, shared: false)
        }
        // The template is rendered once per list version, cut where the root and the session's CSRF
        // token go (PageCache): a page view costs no template rendering, only joining bytes.
        if list.rendersPerViewer {
            let (html, version) = await list.pageHTML(for: Viewer(session: viewer.session, identity: identity))
            let parts: PageParts
            if let cached = pageCache.parts(list.name, version: version) {
                parts = cached
            } else {
                parts = renderPage(list, version: version)
                pageCache.store(list.name, version: version, parts: parts)
            }
            return pageAnswer(request, list: list, version: version, parts: parts, root: Array(html.utf8), viewer: viewer, setCookie: setCookie)
        }
        var version = await list.version
        let parts: PageParts
        if let cached = pageCache.parts(list.name, version: version) {
            parts = cached
        } else {
            let html: String
            (html, version) = await list.pageHTML(for: Viewer(session: viewer.session, identity: identity))
            parts = renderPage(list, version: version).filling(root: Array(html.utf8))
            pageCache.store(list.name, version: version, parts: parts)
        }
        return pageAnswer(request, list: list, version: version, parts: parts, root: [], viewer: viewer, setCookie: setCookie)
    }

    /// `GET /lists/NAME` answered on the event loop, without a task, when all it needs is at hand: a
    /// list shown alike to every viewer whose page (or JSON snapshot) is cached at the version it is at
    /// now (read without awaiting), that the gate allows without awaiting (no authenticate or rule;
    /// the read token, when one is set, presented: the gate is never skipped). Nil sends the request to ``page(_:)``. The bytes are those
    /// ``page(_:)`` would answer.
    func cachedPage(_ request: HTTPRequest) -> HTTPResponse? {
        guard !appPages.hasLayout, let raw = request.pathParameters["name"], let name = ListName(raw),
            let list = registry.existingList(name), !list.rendersPerViewer, request.queryValue("at") == nil,
            gate.allowsWithoutAwaiting(request, list)
        else { return nil }
        let version = list.currentVersion
        if request.prefersJSON {
            return pageCache.snapshotResponse(list.name, version: version)?.response(for: request)
        }
        guard let parts = pageCache.parts(list.name, version: version) else { return nil }
        let (viewer, setCookie) = pageViewer(request)
        return pageAnswer(request, list: list, version: version, parts: parts, root: [], viewer: viewer, setCookie: setCookie)
    }

    /// A list's own page in the app's layout: its title as the heading, the list embedded under it.
    /// Rendered per request (a layout may depend on the viewer), never cached.
    private func pageInLayout(_ request: HTTPRequest, list: any ServedList, identity: Identity?, viewer: PageViewer, setCookie: String?) async -> HTTPResponse {
        let csrf = String(decoding: viewer.token, as: UTF8.self)
        let back = "/lists/\(list.name.rawValue)"
        guard let embedded = await EmbeddedList.rendering(list, viewer: Viewer(session: viewer.session, identity: identity), csrfToken: csrf, back: back,
                                                         at: request.queryValue("at"))
        else {
            return errorResponse(.notFound, "list \(list.name) has no cell \(quoted(request.queryValue("at") ?? ""))")
        }
        let title = appPages.listTitle(of: list.name)
        var response = HTTPResponse.page(
            appPages.render(title: title, identity: identity, path: request.path, csrfToken: csrf, content: RenderedHTML {
                h1 { title }
                embedded
            }), status: .ok)
        response.headers.set("Vary", "Accept, Accept-Encoding")
        if let setCookie {
            response.addField("Set-Cookie", setCookie)
        }
        return response
    }

    /// The page's viewer: the session its cookie carries (verified once, then remembered), or a new
    /// one with the `Set-Cookie` that gives it.
    private func pageViewer(_ request: HTTPRequest) -> (viewer: PageViewer, setCookie: String?) {
        if let viewer = request.cookie(keys.sessionCookieName).flatMap({ pageCache.viewers.viewer(cookie: $0, keys: keys) }),
            viewer.session != nil
        {
            return (viewer, nil)
        }
        let (id, cookie) = keys.mintSession()
        // Not kept in VerifiedSessions: clients that never send cookies back (crawlers, load
        // generators) would only push returning viewers out.
        let viewer = PageViewer(session: id, token: keys.csrfTokenBytes(for: id))
        return (viewer, cookies.setCookie(cookie))
    }

    /// The page from its parts with the viewer's token joined in: gzip without compressing the page
    /// again when the client takes it (its pieces were deflated once for this version, the token goes
    /// in as a stored block: SplicedGzip), plain otherwise.
    private func pageAnswer(
        _ request: HTTPRequest, list: any ServedList, version: Int, parts: PageParts, root: [UInt8], viewer: PageViewer, setCookie: String?,
        shared sharedPage: Bool = true
    ) -> HTTPResponse {
        var response: HTTPResponse
        let shared = sharedPage && !list.rendersPerViewer
        let takesGzip = acceptsGzip(request.headers["Accept-Encoding"])
        if shared, takesGzip, let gzip = pageCache.gzip(list.name, version: version, parts: parts) {
            response = Self.pageGzipResponse
            response.body = .bytes(gzip.gzip(fillers: Array(repeating: viewer.token, count: parts.slots.count)))
            response.compressionSettled = true
        } else {
            response = Self.pageResponse
            response.body = .bytes(parts.bytes(root: root, csrf: viewer.token))
            // Its Vary names Accept-Encoding already: for a client that takes no gzip, the compression
            // layer has nothing left to do. A page per viewer is still compressed there.
            response.compressionSettled = shared && !takesGzip
        }
        if let setCookie {
            response.addField("Set-Cookie", setCookie)
        }
        return response
    }

    /// The Content-Security-Policy of the server's own pages (a list's page, the index): scripts and
    /// styles from this origin only, none inline, no framing.
    static let pageSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

    /// The head of every page: its fields encoded once. `Vary` already names `Accept-Encoding`, as
    /// the compression layer would add it.
    static let pageResponse: HTTPResponse = {
        var response = HTTPResponse.html([])
        response.headers.set("Cache-Control", "no-store")
        response.headers.set("Content-Security-Policy", pageSecurityPolicy)
        response.headers.set("X-Content-Type-Options", "nosniff")
        response.headers.set("Vary", "Accept, Accept-Encoding")
        return response.prepared()
    }()

    /// The same head for the gzip page.
    static let pageGzipResponse: HTTPResponse = {
        var response = pageResponse
        response.headers.set("Content-Encoding", "gzip")
        return response.prepared()
    }()

    /// The snapshot JSON answer of `GET /lists/NAME`.
    static func snapshotResponse(_ bytes: [UInt8]) -> HTTPResponse {
        var response = HTTPResponse.json(bytes)
        response.headers.set("Vary", "Accept")
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// The page template of `list` at `version`, cut at its root and token (see PageCache).
    private func renderPage(_ list: any ServedList, version: Int) -> PageParts {
        pageCache.cut(assets.templates.render("page", [
            "list": list.name.rawValue,
            "title": appPages.listTitle(of: list.name),
            "version": version,
            "root": pageCache.rootMarker,
            "csrf": pageCache.csrfMarker,
            "script": assets.scriptURL,
            "stylesheet": assets.stylesheetURL,
            "siteStylesheet": assets.siteStylesheetURL,
            "dragScript": assets.dragScriptURL,
            "isApp": list.owner == .app,
        ]))
    }
}
