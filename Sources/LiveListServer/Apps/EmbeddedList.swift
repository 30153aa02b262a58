import Foundation
import LiveListEngine
public import LiveListHTTP
public import Markup
import LiveListHTML

/// A live list inside a page of the app's own (``AppRequest/embed(_:)``): its root rendered on the server
/// for the viewer, with its actions form. Write it where the list goes. Every list of a page stays live
/// through the page's one script and one event stream (`/events?list=A&list=B`), and works without
/// JavaScript: its buttons post its form, and the answer brings the browser back to this page.
///
/// A list the viewer may not see (the same rule as its own route), or that does not exist, is
/// ``isShown`` false and writes nothing: the page says nothing about it.
public struct EmbeddedList: HTML, Sendable {
    /// The list's name.
    public let name: String
    /// Whether the viewer may see it and it exists: false writes nothing.
    public let isShown: Bool
    /// The version the page shows (0 when not shown).
    public let version: Int
    let markup: RenderedHTML

    /// Writes the actions form and the list's root, or nothing.
    public func render(into writer: inout HTMLWriter) {
        markup.render(into: &writer)
    }

    /// `list` as `viewer` sees it, with its actions form, whose `next` brings a form posted without
    /// JavaScript back to `back`; starting at the cell `key` of a windowed list when given (nil when it
    /// has no such cell).
    static func rendering(_ list: any ServedList, viewer: Viewer, csrfToken: String, back: String, at key: String? = nil) async -> EmbeddedList? {
        guard await list.prepare(for: viewer) == nil else { return nil }
        let root: String
        let version: Int
        if let key {
            guard let found = await list.pageHTML(for: viewer, at: key) else { return nil }
            (root, version) = found
        } else {
            (root, version) = await list.pageHTML(for: viewer)
        }
        let name = list.name.rawValue
        let formID = listFormID(name)
        let markup = RenderedHTML {
            // The list's actions form, as on its own page.
            form(.id(formID), .method("post"), .action("/lists/\(name)/actions")) {
                input(.type("hidden"), .name("csrf"), .value(csrfToken))
                input(.type("hidden"), .name("next"), .value(back))
                button(.name("action"), .value("enter"), .hidden, .tabindex(-1)) { "Save" }
            }
            UnsafeRawHTML(root)
        }
        return EmbeddedList(name: name, isShown: true, version: version, markup: markup)
    }

    static func hidden(_ name: String) -> EmbeddedList {
        EmbeddedList(name: name, isShown: false, version: 0, markup: .empty)
    }
}

extension AppRequest {
    /// List `name` rendered for this viewer, to write in a page (``page(title:status:_:)``): decided by
    /// the same rule as the list's own route (the app's `authenticate` and `rules`, the read token),
    /// never a second one. A list the viewer may not see, or that does not exist, is written as
    /// nothing.
    ///
    ///     let queue = await request.embed("queue")
    ///     return request.page(title: "Queue") { queue }
    public func embed(_ name: String) async -> EmbeddedList {
        guard let listName = ListName(name) else { return .hidden(name) }
        guard case .allowed = await pages.gate.decide(subject, listName), let list = await pages.registry.storedList(listName) else {
            return .hidden(name)
        }
        // A form posted without JavaScript comes back to this page; a page answered to a post (a form
        // shown again with its errors) sends it to the list's own page instead.
        let isGet = http.method == .GET || http.method == .HEAD
        let back = isGet && SameOrigin.isPath(http.target) ? http.target : "/lists/\(listName.rawValue)"
        return await EmbeddedList.rendering(list, viewer: Viewer(session: session, identity: identity), csrfToken: csrfToken, back: back)
            ?? .hidden(name)
    }

    /// A redirect (303 See Other) to a path of this server that shows `flash` once on the next page of
    /// the app's own (``AppPage/flash``): "Ticket filed". The message travels in a cookie signed by the
    /// server (a forged or altered one is ignored), at most ``FlashCookie/maximumBytes`` bytes of it;
    /// a longer message is cut at a character and ends with "…".
    public func redirect(to location: String, flash: String) -> HTTPResponse {
        var response = HTTPResponse.redirect(to: location)
        response.setCookie(Cookie(FlashCookie.name, pages.flashCookie.value(of: flash), maxAge: 120))
        return response
    }
}

/// The signed cookie that carries a flash message across one redirect.
struct FlashCookie: Sendable {
    static let name = "livelist_flash"
    /// The longest message kept, in UTF-8 bytes.
    static let maximumBytes = 1_000
    let keys: SessionKeys

    /// The cookie's value: the message in base64url, a dot, its MAC.
    func value(of message: String) -> String {
        var kept = message
        if kept.utf8.count > Self.maximumBytes {
            var cut = ""
            for character in message {
                guard cut.utf8.count + character.utf8.count + 3 <= Self.maximumBytes else { break }
                cut.append(character)
            }
            kept = cut + "…"
        }
        let coded = Base64URL.encode(kept.utf8)
        return coded + "." + hmacSHA256(key: keys.secret, message: Array("livelist-flash:\(coded)".utf8))
    }

    /// The message of a cookie value, nil when its MAC does not match.
    func message(of value: String) -> String? {
        guard let dot = value.lastIndex(of: "."), value.utf8.count < 4 * Self.maximumBytes else { return nil }
        let coded = String(value[..<dot])
        let presented = Array(value[value.index(after: dot)...].utf8)
        guard keys.verifyingSecrets.contains(where: { constantTimeEqual(Array(hmacSHA256(key: $0, message: Array("livelist-flash:\(coded)".utf8)).utf8), presented) })
        else { return nil }
        return Base64URL.decode(coded).map { String(decoding: $0, as: UTF8.self) }
    }
}
