import Foundation
import LiveListHTTP

/// One line of the access log, as text and as fields (``ServerConfiguration/accessLogEntries``): an
/// answered request, or an event stream that ended.
public struct AccessLogEntry: Sendable {
    /// A field's value: text, a whole number, or seconds.
    public enum Value: Sendable, Equatable, CustomStringConvertible {
        case text(String)
        case integer(Int)
        case seconds(Double)

        public var description: String {
            switch self {
            case let .text(text): text
            case let .integer(number): String(number)
            case let .seconds(seconds): String(format: "%.6f", seconds)
            }
        }
    }

    /// What the entry is about: `request` or `stream_ended`.
    public var event: String
    /// The fields, in order (`client`, `method`, `target`, `protocol`, `status`, `bytes`, `duration`,
    /// `user_agent`, `connection`; a stream's end: `client`, `connection`, `duration`, `bytes`, `reason`).
    public var fields: [(name: String, value: Value)]
    /// The same as one line of text: `CLIENT "METHOD TARGET PROTOCOL" STATUS BYTES DURATIONms "USER-AGENT" #CONNECTION`
    /// (nginx's combined format, with the duration and the connection), or
    /// `CLIENT stream #CONNECTION ended after DURATIONs, BYTES bytes (REASON)`.
    public var line: String
}

/// Where the server's own lines go: the access log (as lines and as fields), warnings and errors, as
/// the configuration says.
struct ServerLog: Sendable {
    let configuration: ServerConfiguration
    let trustedProxies: TrustedProxies

    /// A failure of the server's own, for the operator (never in an answer: it can name files).
    func error(_ line: String) {
        configuration.errorLog?(line)
    }

    /// A warning (a refusal at a limit, a proxy not trusted): `warningLog`, else `errorLog`.
    func warning(_ line: String) {
        (configuration.warningLog ?? configuration.errorLog)?(line)
    }

    /// The access log's entry of an answered request. The client is the peer's address, or the last
    /// address of `X-Forwarded-For` when the peer is a trusted proxy; a stream's control token is
    /// never written; text from the request is cut to 200 characters, with quotes and blanks replaced.
    static func accessEntry(_ request: HTTPRequest, _ response: HTTPResponse, trustedProxies: TrustedProxies) -> AccessLogEntry {
        let client = trustedProxies.clientAddress(request) ?? "-"
        let shown = request.target.hasPrefix("/events/") ? "/events/(token)" : request.target
        let target = printable(shown)
        let version = request.version == .http1_0 ? "HTTP/1.0" : "HTTP/1.1"
        let agent = request.headers["User-Agent"].map(printable)
        let seconds = Double(request.elapsed.components.seconds) + Double(request.elapsed.components.attoseconds) / 1e18
        var fields: [(name: String, value: AccessLogEntry.Value)] = [
            ("client", .text(client)), ("method", .text(request.method.rawValue)), ("target", .text(target)), ("protocol", .text(version)),
            ("status", .integer(response.status.code)),
        ]
        let bytes: String
        switch response.body {
        case let .bytes(body):
            fields.append(("bytes", .integer(body.count)))
            bytes = String(body.count)
        case .stream:
            // A stream's bytes are counted at its end (its `stream_ended` entry); a field keeps one type.
            fields.append(("body", .text("stream")))
            bytes = "stream"
        }
        fields.append(("duration", .seconds(seconds)))
        if let agent { fields.append(("user_agent", .text(agent))) }
        fields.append(("connection", .integer(Int(truncatingIfNeeded: request.connectionID))))
        let line = "\(client) \"\(request.method) \(target) \(version)\" \(response.status.code) \(bytes) \(milliseconds(seconds))ms \"\(agent ?? "-")\" #\(request.connectionID)"
        return AccessLogEntry(event: "request", fields: fields, line: line)
    }

    /// The access log's entry of an event stream that ended.
    static func accessEntry(_ ended: HTTPStreamEnd) -> AccessLogEntry {
        let seconds = Double(ended.duration.components.seconds) + Double(ended.duration.components.attoseconds) / 1e18
        let reason = switch ended.reason {
        case .closed: "closed by the server"
        case .peerGone: "the client left"
        case .backlogExceeded: "the client read too slowly"
        case .writeTimeout: "the client stopped reading"
        case .serverShutdown: "the server stopped"
        case .writeFailed: "sending to the client failed"
        }
        let client = ended.remoteAddress.isEmpty ? "-" : ended.remoteAddress
        return AccessLogEntry(
            event: "stream_ended",
            fields: [("client", .text(client)), ("connection", .integer(Int(truncatingIfNeeded: ended.connectionID))), ("duration", .seconds(seconds)),
                     ("bytes", .integer(ended.bytes)), ("reason", .text(reason))],
            line: "\(client) stream #\(ended.connectionID) ended after \(String(format: "%.3f", seconds))s, \(ended.bytes) bytes (\(reason))")
    }

    /// Writes `entry` to the access log (the configuration's text line, and its fields).
    func access(_ entry: AccessLogEntry) {
        configuration.accessLog?(entry.line)
        configuration.accessLogEntries?(entry)
    }

    /// Whether anything takes the access log.
    var takesAccess: Bool {
        configuration.accessLog != nil || configuration.accessLogEntries != nil
    }

    /// The entry of a request the access rule refused, with the kind of refusal and the rule.
    func refusal(_ request: HTTPRequest, _ answer: HTTPResponse, kind: String, rule: String) {
        guard takesAccess else { return }
        var entry = Self.accessEntry(request, answer, trustedProxies: trustedProxies)
        entry.event = "refused"
        entry.fields.insert(contentsOf: [("refusal", .text(kind)), ("rule", .text(rule))], at: 0)
        entry.line = "refused \(kind) by rule \(rule): " + entry.line
        access(entry)
    }

    private static func printable(_ text: String) -> String {
        String(text.prefix(200).map { $0.isASCII && !$0.isWhitespace && $0 != "\"" ? $0 : "?" })
    }

    private static func milliseconds(_ seconds: Double) -> String {
        String(format: "%.3f", seconds * 1000)
    }
}
