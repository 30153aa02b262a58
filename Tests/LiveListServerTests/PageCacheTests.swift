import Foundation
@testable import LiveListHTTP
@testable import LiveListServer
@testable import LiveListEngine
import LiveListTestSupport
import Testing

/// The page and snapshot answers made from caches (cut templates, verified sessions, prepared
/// responses) against the slow path: the template rendered afresh with the viewer's own values, the
/// snapshot run through the compression layer. Byte for byte, in every encoding, for GET and HEAD.
@Suite struct PageCacheTests {
    /// The page of `list` for `cookie`, rendered the slow way: the whole template with the real root
    /// and token, no markers, no cache.
    private func renderedPage(_ server: RouteClient, _ list: String, cookie: String) async throws -> [UInt8] {
        let app = server.app
        let hosted = try #require(app.registry.existingList(listName(list)))
        let session = try #require(app.services.keys.sessionID(fromCookie: cookie))
        let (html, version) = await hosted.pageHTML(for: Viewer(session: session))
        return Array(app.services.assets.templates.render("page", [
            "list": list,
            "title": list,
            "version": version,
            "root": html,
            "csrf": app.services.keys.csrfToken(for: session),
            "script": app.services.assets.scriptURL,
            "stylesheet": app.services.assets.stylesheetURL,
            "siteStylesheet": app.services.assets.siteStylesheetURL,
            "dragScript": app.services.assets.dragScriptURL,
            "isApp": hosted.owner == .app,
        ]).utf8)
    }

    private func cookie(of answer: RouteResponse) throws -> String {
        let field = try #require(answer.header("Set-Cookie"))
        let pair = try #require(field.split(separator: ";").first)
        return String(pair.dropFirst("livelist_session=".count))
    }

    @Test func cachedPagesAreTheTemplateRenderedForTheViewer() async throws {
        let server = try await RouteClient()
        try await server.put("g", ["a", "b <i>&</i>", server.app.services.pageCache.rootMarker, server.app.services.pageCache.csrfMarker])
        let first = try await server.get("/lists/g", headers: [("Accept", "text/html")])
        #expect(first.status == 200)
        let minted = try cookie(of: first)
        #expect(first.body == (try await renderedPage(server, "g", cookie: minted)), "the page of a minted session")
        let otherCookie = try cookie(of: try await server.get("/lists/g"))
        for viewer in [minted, otherCookie, minted] {
            let answer = try await server.get("/lists/g", headers: [("Cookie", "livelist_session=\(viewer)")])
            #expect(answer.header("Set-Cookie") == nil)
            #expect(answer.body == (try await renderedPage(server, "g", cookie: viewer)))
            #expect(answer.header("Vary") == "Accept, Accept-Encoding")
        }
        // A new version is a new page.
        try await server.put("g", ["c"])
        let after = try await server.get("/lists/g", headers: [("Cookie", "livelist_session=\(minted)")])
        #expect(after.body == (try await renderedPage(server, "g", cookie: minted)))
        #expect(after.text.contains(">c<") || after.text.contains("c</"), "\(after.text.count)")
    }

    /// Whether the app answers `GET target` on the event loop (no task).
    private func answeredInline(_ server: RouteClient, _ target: String, cookie: String? = nil, accept: String = "text/html") throws -> Bool {
        let decoded = try TargetDecoder.decode(Array(target.utf8), method: .GET).get()
        var fields = HTTPHeaders()
        fields.add("Accept", accept)
        if let cookie { fields.add("Cookie", "livelist_session=\(cookie)") }
        var request = HTTPRequest(method: .GET, version: .http1_1, target: target, path: decoded.path, pathSegments: decoded.segments,
                                  query: decoded.query, headers: fields, body: [], trailers: HTTPHeaders(), keepAlive: true, host: "localhost")
        if case .response = server.handler.outcome(&request) { return true }
        return false
    }

    @Test func aPageCachedAtTheListsVersionIsAnsweredOnTheEventLoop() async throws {
        let server = try await RouteClient()
        try await server.put("g", ["a"])
        let viewer = try cookie(of: try await server.get("/lists/g"))
        #expect(try answeredInline(server, "/lists/g", cookie: viewer), "cached at the current version")
        #expect(try answeredInline(server, "/lists/g"), "a new viewer is minted inline too")
        #expect(try !answeredInline(server, "/lists/g", accept: "application/json"), "JSON not asked for yet takes the task")
        let json = try await server.get("/lists/g", headers: [("Accept", "application/json")])
        #expect(try answeredInline(server, "/lists/g", accept: "application/json"), "then its snapshot is cached at the version")
        #expect(try await server.get("/lists/g", headers: [("Accept", "application/json")]).body == json.body)
        #expect(try !answeredInline(server, "/lists/missing"), "a missing list takes the task (404)")
        // A write moves the version at once: the next view is not served from the old page.
        try await server.put("g", ["a", "b"])
        #expect(try !answeredInline(server, "/lists/g", cookie: viewer), "the cache holds only the old version")
        #expect(try !answeredInline(server, "/lists/g", accept: "application/json"), "so does the snapshot's")
        let newJSON = try await server.get("/lists/g", headers: [("Accept", "application/json")])
        #expect(newJSON.body == (await (try #require(server.app.registry.existingList(listName("g")))).snapshotJSON()))
        let after = try await server.get("/lists/g", headers: [("Cookie", "livelist_session=\(viewer)")])
        #expect(after.body == (try await renderedPage(server, "g", cookie: viewer)))
        #expect(try answeredInline(server, "/lists/g", cookie: viewer))
        let inline = try await server.get("/lists/g", headers: [("Cookie", "livelist_session=\(viewer)")])
        #expect(inline.body == after.body)
        #expect(try await server.delete("/lists/g").status == 200)
        #expect(try await server.get("/lists/g").status == 404)
        #expect(try await server.get("/lists/g", headers: [("Accept", "application/json")]).status == 404)
        // Made again, the list's versions go on from the deleted one's, so no cached answer fits it.
        try await server.put("g", ["z"])
        #expect(try !answeredInline(server, "/lists/g", cookie: viewer))
        #expect(try !answeredInline(server, "/lists/g", accept: "application/json"))
        let again = try await server.get("/lists/g", headers: [("Accept", "application/json")])
        #expect(again.text.contains("\"z\""), "\(again.text)")
        let page = try await server.get("/lists/g", headers: [("Cookie", "livelist_session=\(viewer)")])
        #expect(page.body == (try await renderedPage(server, "g", cookie: viewer)))
    }

    @Test func gzipAndHeadAnswerTheSamePage() async throws {
        let server = try await RouteClient()
        try await server.put("g", (0 ..< 60).map { "cell \($0)" })
        let viewer = try cookie(of: try await server.get("/lists/g"))
        let sessionHeader = ("Cookie", "livelist_session=\(viewer)")
        let plain = try await server.get("/lists/g", headers: [sessionHeader])
        let zipped = try await server.get("/lists/g", headers: [sessionHeader, ("Accept-Encoding", "gzip")])
        #expect(zipped.header("Content-Encoding") == "gzip")
        #expect(gunzip(zipped.body) == plain.body)
        #expect(zipped.header("Vary") == "Accept, Accept-Encoding")
        let head = try await server.head("/lists/g", headers: [sessionHeader])
        #expect(head.body.isEmpty)
        #expect(head.headers.fields.map(\.name) == plain.headers.fields.map(\.name))
        #expect(head.header("Content-Length") == plain.header("Content-Length"))
    }

    @Test func theSnapshotAnswerIsWhatCompressionMakesOfIt() async throws {
        let server = try await RouteClient()
        try await server.put("g", (0 ..< 60).map { "cell \($0)" })
        let hosted = try #require(server.app.registry.existingList(listName("g")))
        for round in 0 ..< 2 {
            let bytes = await hosted.snapshotJSON()
            for encoding in [nil, "gzip", "br"] {
                for method in [HTTPMethod.GET, .HEAD] {
                    var headers = [("Accept", "application/json")]
                    if let encoding { headers.append(("Accept-Encoding", encoding)) }
                    let answer = try await server.send(method, "/lists/g", headers: headers)
                    var fields = HTTPHeaders()
                    for (name, value) in headers { fields.add(name, value) }
                    let request = HTTPRequest(method: method, version: .http1_1, target: "/lists/g", path: "/lists/g", pathSegments: ["lists", "g"],
                                              query: [], headers: fields, body: [], trailers: HTTPHeaders(), keepAlive: true, host: "h")
                    let slow = RouteResponse(compress(PageRoutes.snapshotResponse(bytes), for: request, options: Compression(),
                                                      cache: CompressionCache(limit: 1 << 20)), method: method, refusedBeforeBody: false)
                    #expect(answer.status == 200)
                    #expect(answer.headers.fields.map { "\($0.name): \($0.value)" } == slow.headers.fields.map { "\($0.name): \($0.value)" },
                            "round \(round) \(encoding ?? "-") \(method)")
                    #expect(answer.body == slow.body)
                    if encoding == "gzip", method == .GET {
                        #expect(answer.header("Content-Encoding") == "gzip")
                        #expect(gunzip(answer.body) == bytes)
                    }
                }
            }
            // A new version: new bytes, a new answer.
            try await server.put("g", (0 ..< 61).map { "cell \($0)" })
        }
        let latest = try await server.get("/lists/g", headers: [("Accept", "application/json")])
        #expect(latest.body == (await hosted.snapshotJSON()))
    }

    @Test func onlyVerifiedCookiesAreRemembered() async throws {
        let server = try await RouteClient()
        try await server.put("g", ["a"])
        let viewers = server.app.services.pageCache.viewers
        let before = viewers.count
        let forged = String(repeating: "a", count: 64)
        let answer = try await server.get("/lists/g", headers: [("Cookie", "livelist_session=\(forged)")])
        #expect(answer.header("Set-Cookie") != nil, "a forged cookie is no session")
        #expect(!answer.text.contains(server.app.services.keys.csrfToken(for: String(forged.prefix(32)))))
        #expect(viewers.count == before, "neither the forged cookie nor the one minted for it is kept")
        #expect(viewers.viewer(cookie: forged, keys: server.app.services.keys) == nil)
        #expect(viewers.count == before)
        let minted = try cookie(of: answer)
        let back = try await server.get("/lists/g", headers: [("Cookie", "livelist_session=\(minted)")])
        #expect(back.header("Set-Cookie") == nil)
        #expect(viewers.count == before + 1, "a cookie that came back verified is kept")
    }

    @Test func theVerifiedSessionsStayBounded() {
        let keys = SessionKeys(secret: Array(repeating: 7, count: 32))
        let viewers = VerifiedSessions(capacity: 8)
        for _ in 0 ..< 50 {
            let (_, cookie) = keys.mintSession()
            let viewer = viewers.viewer(cookie: cookie, keys: keys)
            #expect(viewer?.token == Array(keys.csrfToken(for: String(cookie.prefix(32))).utf8))
            #expect(viewers.count <= 8)
        }
    }

    /// Lists created, read and deleted under new names leave no pages behind: the delete forgets
    /// them, and lists gone otherwise (another node's delete) are swept once entries double.
    @Test func pagesOfDeletedListsAreNotKept() async throws {
        let server = try await RouteClient()
        let cache = server.app.services.pageCache
        for index in 0 ..< 300 {
            try await server.put("gone-\(index)", ["a"])
            #expect(try await server.get("/lists/gone-\(index)").status == 200)
            #expect(try await server.get("/lists/gone-\(index)", headers: [("Accept", "application/json")]).status == 200)
            #expect(try await server.get("/lists/gone-\(index)", headers: [("Accept-Encoding", "gzip")]).status == 200)
            #expect(try await server.delete("/lists/gone-\(index)").status == 200)
        }
        #expect(cache.count == 0, "\(cache.count) entries of deleted lists")
        // Entries of a list that left without this node's delete route are swept.
        let sweeping = PageCache { name in name.rawValue == "kept" }
        let parts = cache.cut("<p>page</p>")
        for index in 0 ..< 1_000 {
            sweeping.store(listName("other-\(index)"), version: 1, parts: parts)
            sweeping.store(listName("kept"), version: index, parts: parts)
        }
        #expect(sweeping.count <= 2 * PageCache.minimumSweep + 1, "\(sweeping.count)")
        #expect(sweeping.parts(listName("kept"), version: 999) != nil)
    }
}
