import LiveListEngine
import Foundation
import LiveListHTTP
import LiveListHTML

extension LiveListApp {
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
        let html = templates.render("index", ["lists": lists, "stylesheet": stylesheetURL, "siteStylesheet": siteStylesheetURL, "hasLists": !lists.isEmpty])
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
        switch await guardedList(request, navigable: true) {
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
        guard let raw = request.pathParameters["name"], let name = ListName(raw),
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
        return (viewer, sessionCookiePrefix + cookie + sessionCookieAttributes)
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
        pageCache.cut(templates.render("page", [
            "list": list.name.rawValue,
            "version": version,
            "root": pageCache.rootMarker,
            "csrf": pageCache.csrfMarker,
            "script": scriptURL,
            "stylesheet": stylesheetURL,
            "siteStylesheet": siteStylesheetURL,
            "dragScript": dragScriptURL,
            "isApp": list.owner == .app,
        ]))
    }

    /// The version the query parameter `name` gives: nil when there is none, 400 `malformed_since` when it
    /// is not a version.
    private func versionQuery(_ name: String, of request: HTTPRequest) -> Result<Int?, RefusedAnswer> {
        guard let text = request.queryValue(name) else { return .success(nil) }
        guard let version = ListVersion.parse(text) else {
            return .failure(RefusedAnswer(errorResponse(.malformedSince, "\(name): \(quoted(text)) is not a version (a non-negative integer)")))
        }
        return .success(version)
    }

    /// `GET /lists/NAME/changes?since=V`: one changeset from V to now.
    func changes(_ request: HTTPRequest) async -> HTTPResponse {
        let list: any ServedList
        let identity: Identity?
        switch await guardedList(request) {
        case let .success(found): (list, identity) = (found.list, found.identity)
        case let .failure(answer): return answer.response
        }
        let since: Int
        switch versionQuery("since", of: request) {
        case let .success(version?): since = version
        case .success(nil): return errorResponse(.malformedSince, "since: missing; ask for changes?since=VERSION")
        case let .failure(answer): return answer.response
        }
        let viewer = Viewer(session: keys.session(from: request), identity: identity)
        var response = HTTPResponse.json(await list.changes(since: since, for: viewer).encodedJSON())
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// `GET /lists/NAME/cells?from=I&count=N[&version=V][&keys=1]`: the cells of a windowed list that
    /// scroll into view, at the current version, with the changeset that brings a client at V there
    /// (docs/PROTOCOL.md, "Windowed lists").
    func cells(_ request: HTTPRequest) async -> HTTPResponse {
        let list: any ServedList
        let identity: Identity?
        switch await guardedList(request) {
        case let .success(found): (list, identity) = (found.list, found.identity)
        case let .failure(answer): return answer.response
        }
        func number(_ name: String, default value: Int?, limit: Int) -> Result<Int, HTTPError> {
            guard let text = request.queryValue(name) else {
                return value.map { .success($0) } ?? .failure(ErrorCode.malformedRange.error("\(name): missing"))
            }
            guard let number = ListVersion.parse(text), number <= limit else {
                return .failure(ErrorCode.malformedRange.error("\(name): \(quoted(text)) is not an integer from 0 to \(limit)"))
            }
            return .success(number)
        }
        let from: Int
        let count: Int
        switch (number("from", default: 0, limit: Int(Int32.max)), number("count", default: nil, limit: Self.maximumRangeCount)) {
        case let (.success(first), .success(size)): (from, count) = (first, size)
        case let (.failure(error), _), let (_, .failure(error)): return errorResponse(error)
        }
        let since: Int?
        switch versionQuery("version", of: request) {
        case let .success(version): since = version
        case let .failure(answer): return answer.response
        }
        let keys: Bool
        switch request.queryValue("keys") {
        case nil, "0": keys = false
        case "1": keys = true
        case let text?: return errorResponse(.malformedRange, "keys: \(quoted(text)) is not 0 or 1")
        }
        let viewer = Viewer(session: self.keys.session(from: request), identity: identity)
        var response = HTTPResponse.json(await list.window(from: from, count: count, since: since, keys: keys, for: viewer))
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// The most cells one range request may ask for.
    static let maximumRangeCount = 1_000

    /// `GET /lists/NAME/events[?since=V]`: the list's changesets as Server-Sent Events.
    func events(_ request: HTTPRequest) async -> HTTPResponse {
        let decidedAt = gate.revocationCount
        let list: any ServedList
        let identity: Identity?
        switch await guardedList(request) {
        case let .success(found): (list, identity) = (found.list, found.identity)
        case let .failure(answer): return answer.response
        }
        var since: Int?
        switch versionQuery("since", of: request) {
        case let .success(version): since = version
        case let .failure(answer): return answer.response
        }
        if let lastEventID = request.headers["Last-Event-ID"] {
            // A restarted EventSource must recover by itself: a bad id gets a reset, never an error.
            since = ListVersion.parse(lastEventID) ?? -1
        }
        let session = keys.session(from: request)
        // Where the stream starts, decided before it opens: the client's version, else the list's now.
        // The opening says it, sent with the head, and the stream subscribes from it, so a write that
        // lands in between reaches the stream as a catch-up (docs/PROTOCOL.md, "Stream framing").
        let resume = since ?? list.currentVersion
        // A list name needs no escaping in JSON (ListName: letters, digits, `.`, `_`, `-`).
        let opening = ServerSentEvent(id: String(resume), event: "stream", data: #"{"protocol":1,"list":"\#(list.name.rawValue)","version":\#(resume)}"#)
        return HTTPResponse.eventStream(retry: configuration.retryMilliseconds, opening: opening, heartbeat: configuration.heartbeat) { [self] stream in
            trackStream(stream, request: request, identity: identity, session: session, names: [list.name], decidedAt: decidedAt,
                        source: .list(list))
            Task { await list.subscribe(stream, since: resume, viewer: Viewer(session: session, identity: identity)) }
        }
    }

    /// Each of `names` decided on its own for `subject`, as a multiplexed stream carries them: those it
    /// may view, the others, and the rule of the first refused for want of a viewer or of the read token.
    func decideEach(
        _ names: [ListName], for subject: AccessGate.Subject
    ) async -> (allowed: [ListName], refused: [ListName], signInRule: String?) {
        var allowed: [ListName] = []
        var refused: [ListName] = []
        var signInRule: String?
        for name in names {
            switch await gate.decide(subject, name) {
            case .allowed: allowed.append(name)
            case let .signInNeeded(rule):
                signInRule = signInRule ?? rule
                refused.append(name)
            case .denied:
                refused.append(name)
            }
        }
        return (allowed, refused, signInRule)
    }

    /// Where a multiplexed stream starts each of `names`, decided before it opens: the client's version
    /// (`since`), else for a list its viewer may see its version now, else 0 (a name without a list, and
    /// a refused list, whose version is never told). Each list subscribes from there, so that the
    /// opening's vector never claims a version that the stream would not deliver after it.
    func startingVersions(of names: [ListName], since: [String: Int], allowed: [ListName]) -> [String: Int] {
        var versions: [String: Int] = [:]
        for name in names {
            versions[name.rawValue] = since[name.rawValue] ?? (allowed.contains(name) ? registry.existingList(name)?.currentVersion : nil) ?? 0
        }
        return versions
    }

    /// `GET /events?list=A&list=B[&since=A:3,B:7]`: one stream for every list of a page.
    func multiplexedEvents(_ request: HTTPRequest) async -> HTTPResponse {
        let raw = request.queryValues("list")
        guard !raw.isEmpty else {
            return errorResponse(.missingList, "list: name at least one list (events?list=A&list=B)")
        }
        guard raw.count <= configuration.maximumListsPerStream else {
            return errorResponse(.tooManyLists, "list: \(raw.count) lists, more than the limit of \(configuration.maximumListsPerStream)")
        }
        var names: [ListName] = []
        for text in raw {
            guard let name = ListName(text) else {
                return missingList(text)
            }
            if !names.contains(name) {
                names.append(name)
            }
        }
        var since: [String: Int] = [:]
        if let text = request.queryValue("since") {
            guard let vector = MultiplexedStream.parseVector(text) else {
                return errorResponse(.malformedSince, "since: \(quoted(text)) is not a version vector (A:3,B:7)")
            }
            since = vector
        }
        if let lastEventID = request.headers["Last-Event-ID"] {
            since = MultiplexedStream.parseVector(lastEventID) ?? Dictionary(uniqueKeysWithValues: names.map { ($0.rawValue, -1) })
        }
        // Each list is decided on its own: the stream carries those its viewer may see, and answers
        // the others as names of no list (an empty reset, never joined). Nobody signed in and no list
        // allowed: 401, as the single-list routes answer.
        let decidedAt = gate.revocationCount
        let subject = await gate.subject(request)
        let (allowed, refused, signInRule) = await decideEach(names, for: subject)
        if allowed.isEmpty, let signInRule {
            return signInAnswer(request, rule: signInRule, navigable: false)
        }
        if !refused.isEmpty {
            metrics.refused(subject.identity == nil ? .unauthenticated : .denied)
        }
        let session = keys.session(from: request)
        let listNames = names
        let registry = self.registry
        let resume = startingVersions(of: names, since: since, allowed: allowed)
        let viewer = Viewer(session: session, identity: subject.identity)
        // Its opening says where each list starts (docs/PROTOCOL.md, "Stream framing") and names it to
        // the requests that add and drop its lists (POST /events/TOKEN), which only its browser session
        // may send: a stream opened without a session (a script's, with the read token) has no token,
        // and its lists are the ones it asked for.
        let token = session == nil ? nil : SessionKeys.mintToken()
        let versions = names.map { #""\#($0.rawValue)":\#(resume[$0.rawValue] ?? 0)"# }.joined(separator: ",")
        let member = token.map { #""stream":"\#($0)","# } ?? ""
        let opening = ServerSentEvent(id: MultiplexedStream.vector(names.map(\.rawValue), resume), event: "stream",
                                      data: #"{"protocol":1,\#(member)"versions":{\#(versions)}}"#)
        return HTTPResponse.eventStream(retry: configuration.retryMilliseconds, opening: opening, heartbeat: configuration.heartbeat) {
            [self, allowed, refused] stream in
            let multiplexed = MultiplexedStream(sink: stream, names: listNames.map(\.rawValue), versions: resume)
            let control = StreamControl(token: token, multiplexed: multiplexed, session: session)
            trackStream(stream, request: request, identity: subject.identity, session: session, names: allowed, decidedAt: decidedAt,
                        source: .multiplexed(control))
            registry.refuse(multiplexed, names: refused, since: resume)
            guard !allowed.isEmpty else {
                // Nothing it may see: the refusals are all it gets.
                stream.close()
                return
            }
            Task { await registry.subscribe(multiplexed, names: allowed, since: resume, viewer: viewer) }
        }
    }
}
