import Foundation
public import LiveListHTTP
import Synchronization

/// A browser without a screen (``TestClient/browser(headers:from:)``): it keeps the cookies the app sets,
/// the CSRF token of the last page it opened and the version each of that page's lists showed, and
/// posts forms and actions as a page does.
public final class TestBrowser: Sendable {
    private struct State {
        var cookies: [String: String] = [:]
        var csrf: String?
        /// The lists of the pages opened, each at the version read last.
        var lists: [String: Int] = [:]
        var page: TestResponse?
    }

    private let client: TestClient
    private let headers: [(String, String)]
    private let address: String
    private let state = Mutex(State())

    init(client: TestClient, headers: [(String, String)], address: String) {
        self.client = client
        self.headers = headers
        self.address = address
    }

    /// The lists the pages opened so far show, with the version each was read at.
    public var lists: [String: Int] { state.withLock { $0.lists } }

    /// The value of the cookie `name` that the app set, nil when none (or it was cleared).
    public func cookie(_ name: String) -> String? { state.withLock { $0.cookies[name] } }

    /// `GET target` with the browser's cookies, as a navigation (`Accept: text/html`). A page's lists
    /// and CSRF token are remembered; a redirect is not followed (``follow(_:)``).
    @discardableResult
    public func get(_ target: String) async throws -> TestResponse {
        let response = try await send(.GET, target, extra: [("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")])
        if response.header("Content-Type")?.hasPrefix("text/html") == true {
            remember(page: response)
        }
        return response
    }

    /// Follows `response` when it is a redirect (a `GET` of its `Location`); else returns it.
    public func follow(_ response: TestResponse) async throws -> TestResponse {
        guard let location = response.location else { return response }
        return try await get(location)
    }

    /// Posts a form to `target` as the browser does: its fields, with the CSRF token of the last page
    /// opened (unless `fields` has `csrf`), `application/x-www-form-urlencoded`.
    @discardableResult
    public func submit(_ target: String, _ fields: [String: String] = [:]) async throws -> TestResponse {
        var all = fields
        if all["csrf"] == nil, let token = state.withLock({ $0.csrf }) {
            all["csrf"] = token
        }
        return try await send(.POST, target, extra: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(Self.formBody(all).utf8))
    }

    /// Sends the action `action` about `cell` of list `list` as the page's script does (its actions form,
    /// `LiveList-Action: 1`): 204 when the app took it, 422 with the reason when it refused it.
    @discardableResult
    public func act(_ list: String, _ action: String, cell: String? = nil, fields: [String: String] = [:]) async throws -> TestResponse {
        var all = fields
        all["action"] = action + ":" + (cell ?? "")
        if all["csrf"] == nil, let token = state.withLock({ $0.csrf }) {
            all["csrf"] = token
        }
        return try await send(.POST, "/lists/\(list)/actions", extra: [("Content-Type", "application/x-www-form-urlencoded"), ("LiveList-Action", "1")],
                              body: Array(Self.formBody(all).utf8))
    }

    /// What this viewer's stream carries for `list` since the version the browser last read (the page
    /// opened, or the last call): one changeset that covers every version since (as a stream that
    /// resumes gets it), decoded, or nil when nothing changed. Read through the list's `changes` route,
    /// under the same access rule as the stream.
    ///
    /// - Throws: ``TestClientError`` when no page showed the list, or the route refuses it.
    public func changes(_ list: String) async throws -> TestChangeset? {
        guard let since = state.withLock({ $0.lists[list] }) else {
            throw TestClientError("no page opened by this browser shows the list \(list)")
        }
        let response = try await send(.GET, "/lists/\(list)/changes?since=\(since)", extra: [("Accept", "application/json")])
        guard response.status == 200 else {
            throw TestClientError("GET /lists/\(list)/changes answered \(response.status): \(response.text)")
        }
        let changeset = try TestChangeset(json: response.body)
        state.withLock { $0.lists[list] = changeset.version }
        return changeset.operations.isEmpty && changeset.from == changeset.version ? nil : changeset
    }

    /// One request with the browser's headers and cookies; the cookies it sets are kept.
    public func send(_ method: HTTPMethod, _ target: String, extra: [(String, String)] = [], body: [UInt8] = []) async throws -> TestResponse {
        let cookies = state.withLock { $0.cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ") }
        var fields = headers + extra
        if !cookies.isEmpty { fields.append(("Cookie", cookies)) }
        let response = try await client.send(method, target, headers: fields, body: body, from: address)
        keep(cookies: response.headers.values("Set-Cookie"))
        return response
    }

    private func keep(cookies: [String]) {
        state.withLock { state in
            for field in cookies {
                let attributes = field.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                guard let pair = attributes.first, let equals = pair.firstIndex(of: "=") else { continue }
                let name = String(pair[..<equals])
                let value = String(pair[pair.index(after: equals)...])
                let expired = attributes.contains { $0.lowercased() == "max-age=0" }
                state.cookies[name] = expired ? nil : value
            }
        }
    }

    private func remember(page: TestResponse) {
        let html = page.text
        let csrf = Self.attribute(after: #"<meta name="livelist-csrf" content=""#, in: html)
            ?? Self.attribute(after: #"name="csrf" value=""#, in: html)
        var found: [String: Int] = [:]
        for chunk in html.components(separatedBy: #" data-list=""#).dropFirst() {
            guard let end = chunk.firstIndex(of: "\"") else { continue }
            let name = String(chunk[..<end])
            if let version = Self.attribute(after: #"data-version=""#, in: String(chunk.prefix(400))).flatMap(Int.init) {
                found[name] = version
            }
        }
        state.withLock { state in
            state.page = page
            if let csrf { state.csrf = csrf }
            state.lists.merge(found) { _, new in new }
        }
    }

    private static func attribute(after marker: String, in text: String) -> String? {
        guard let start = text.range(of: marker)?.upperBound, let end = text[start...].firstIndex(of: "\"") else { return nil }
        return String(text[start ..< end])
    }

    static func formBody(_ fields: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._*")
        func encode(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: allowed)?.replacingOccurrences(of: "%20", with: "+") ?? ""
        }
        return fields.sorted { $0.key < $1.key }.map { encode($0.key) + "=" + encode($0.value) }.joined(separator: "&")
    }
}

/// A changeset as a list's stream carries it (docs/PROTOCOL.md): where it starts, where it ends, and
/// its operations, each as its JSON object.
public struct TestChangeset: Sendable {
    /// The list's name.
    public let list: String
    /// The version it starts from.
    public let from: Int
    /// The version it brings the list to.
    public let version: Int
    /// Each operation's kind (`insert`, `delete`, `move`, `reload`, `reset`, the sections' ones, …).
    public let kinds: [String]
    /// The operations as JSON text, one each.
    public let operations: [String]

    init(json: [UInt8]) throws {
        guard let object = try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any],
            let list = object["list"] as? String, let version = object["version"] as? Int
        else {
            throw TestClientError("not a changeset: \(String(decoding: json, as: UTF8.self))")
        }
        self.list = list
        self.version = version
        from = object["from"] as? Int ?? version
        let ops = object["ops"] as? [[String: Any]] ?? []
        kinds = ops.map { $0["op"] as? String ?? "" }
        operations = try ops.map { String(decoding: try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]), as: UTF8.self) }
    }

    /// Whether any operation's JSON contains `text` (a cell's key, a word of its HTML).
    public func mentions(_ text: String) -> Bool {
        operations.contains { $0.contains(text) }
    }
}
