import LiveListHTTP
import Markup

// Error answers for browsers (docs/PROTOCOL.md, "Errors"): a request whose `Accept` ranks
// `text/html` above `application/json` (a browser's navigation) gets an HTML page in the site's style
// with a way back; every other client keeps the JSON body `{"error": CODE, "detail": TEXT}`.

enum ErrorPages {
    /// The policy of an error page: its own stylesheets, nothing inline, no scripts.
    static let contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// `response` as the request wants it: a JSON error answer becomes an HTML page (same status and
    /// fields such as `Allow` or `Retry-After`) when the request prefers HTML; anything else is
    /// returned unchanged. Every routed answer passes through here (LiveListApp.handler), so the
    /// routes, the router's 404 and 405 and the static files need no change.
    static func negotiated(_ response: HTTPResponse, for request: HTTPRequest, layout: AppPages? = nil) -> HTTPResponse {
        negotiated(response, headers: request.headers, path: request.path, layout: layout)
    }

    /// The same for a request known by its header fields only (the HTTP layer's own refusals, whose
    /// request never reached the routes).
    static func negotiated(_ response: HTTPResponse, headers: HTTPHeaders, path: String = "/", layout: AppPages? = nil) -> HTTPResponse {
        guard response.status.code >= 400, let refusal = response.refusal else {
            return response
        }
        guard headers.prefersHTML else {
            // The JSON variant of an answer that has an HTML one says so too, for caches.
            var json = response
            let vary = json.headers["Vary"]
            if !(vary?.split(separator: ",").contains { $0.trimmingSpaces.lowercased() == "accept" } ?? false) {
                json.headers.set("Vary", vary.map { $0 + ", Accept" } ?? "Accept")
            }
            return json
        }
        var page = response
        if let layout, layout.hasLayout {
            // The app's layout around the same words; its pages' policy, since the layout loads its
            // stylesheets and scripts.
            let title = "\(response.status.code) \(response.status.reasonPhrase)"
            page.body = .bytes(layout.render(title: title, status: response.status, identity: nil, path: path, csrfToken: "",
                                             content: content(title: title, status: response.status, errorCode: refusal.code, detail: refusal.detail)))
            page.headers.set("Content-Security-Policy", HTTPResponse.appPageSecurityPolicy)
        } else {
            page.body = .bytes(html(status: response.status, code: refusal.code, detail: refusal.detail))
            page.headers.set("Content-Security-Policy", contentSecurityPolicy)
        }
        page.headers.set("Content-Type", "text/html; charset=utf-8")
        page.headers.set("Vary", "Accept")
        page.headers.set("Cache-Control", "no-store")
        return page
    }

    /// What an error page says inside the app's layout: the status as its heading, a sentence for
    /// people, the code and detail for whoever reports it, and a link back to `/`.
    static func content(title: String, status: HTTPStatus, errorCode: String, detail: String) -> RenderedHTML {
        RenderedHTML {
            div(.class("error-page")) {
                h1 { title }
                p { sentence(status.code) }
                p(.class("error-detail")) {
                    code { errorCode }
                    ": \(detail)"
                }
                p { a(.class("button-link"), .href("/")) { "Back to the start page" } }
            }
        }
    }

    /// The page without an app's layout: the status as its title, a sentence for people, the code and
    /// detail for whoever reports it, and a link back to `/`; nothing names the server. Everything that
    /// can come from the request is escaped.
    static func html(status: HTTPStatus, code: String, detail: String) -> [UInt8] {
        let title = "\(status.code) \(escaped(status.reasonPhrase))"
        let page = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="robots" content="noindex">
            <title>\(title)</title>
            <link rel="icon" href="/favicon.svg" type="image/svg+xml">
            <link rel="stylesheet" href="/livelist.css">
            <link rel="stylesheet" href="/site.css">
            </head>
            <body>
            <header class="page-header">
            <h1>\(title)</h1>
            </header>
            <main class="error-page">
            <p>\(sentence(status.code))</p>
            <p class="error-detail"><code>\(escaped(code))</code>: \(escaped(detail))</p>
            <p><a class="button-link" href="/">Back to the start page</a></p>
            </main>
            </body>
            </html>

            """
        return Array(page.utf8)
    }

    static func sentence(_ status: Int) -> String {
        switch status {
        case 404: "There is nothing at this address. The list may have been deleted, or the link is mistyped."
        case 401, 403: "This page is not open to you from here."
        case 405: "This address exists, but not for this kind of request."
        case 408: "The request took too long to arrive."
        case 413: "What was sent is larger than this server accepts."
        case 400 ..< 500: "The request could not be understood as sent."
        case 503: "The server is busy right now. Please try again in a moment."
        default: "Something went wrong on the server. Please try again in a moment."
        }
    }

    /// Text for an element or a double-quoted attribute, escaped by the HTML writer of every page.
    static func escaped(_ text: String) -> String {
        var writer = HTMLWriter(capacity: text.utf8.count + 16)
        writer.appendAttributeValue(text)
        return writer.string
    }
}
