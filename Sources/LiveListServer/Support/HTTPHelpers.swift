import Foundation
public import LiveListEngine
public import LiveListHTTP
import LiveListHTML

// The parsers of request text that belong to lists (actions, versions in entity tags, write
// preconditions); the generic ones (cookies, q-values, forms, credentials) are LiveListHTTP's.
extension HeaderParsing {
    /// The `TYPE:CELL` value of an action button: the type, and the cell when one follows the colon.
    package static func action(_ combined: String) -> (type: String, cell: String?) {
        guard let colon = combined.firstIndex(of: ":") else { return (combined, nil) }
        let cell = combined[combined.index(after: colon)...]
        return (String(combined[..<colon]), cell.isEmpty ? nil : String(cell))
    }

    /// A button's type with its payload, `NAME;PAYLOAD` (the payload's JSON in base64url, as
    /// `actionButton(_:cell:payload:)` writes it): the name, and the payload's JSON text when there is
    /// one. A payload that is not base64url of UTF-8 is returned as it is (its JSON then fails to
    /// decode, and the action is refused 422).
    package static func actionPayload(_ type: String) -> (type: String, payload: String?) {
        guard let semicolon = type.firstIndex(of: ";") else { return (type, nil) }
        let coded = type[type.index(after: semicolon)...]
        let json = Base64URL.decode(coded).flatMap { String(data: $0, encoding: .utf8) } ?? String(coded)
        return (String(type[..<semicolon]), json)
    }

    /// The version in a strong entity tag: `"5"`, or `"5-gzip"`, the tag the server gives the gzip
    /// encoding of the same version. Nil for a weak tag or anything else.
    package static func entityTag(_ text: some StringProtocol) -> Int? {
        let trimmed = text.trimmingSpaces
        guard trimmed.utf8.count >= 3, trimmed.hasPrefix("\""), trimmed.hasSuffix("\"") else { return nil }
        var inside = trimmed.dropFirst().dropLast()
        if inside.hasSuffix("-gzip") {
            inside = inside.dropLast(5)
        }
        return ListVersion.parse(inside)
    }
}

extension HeaderParsing {
    /// The precondition of a PUT (RFC 9110 sections 13.1.1 and 13.1.2), checked by the list's ordered
    /// write path, from its `If-Match` and `If-None-Match` values (each field's lines joined
    /// with commas), or the 400 answer: both at once, a weak or foreign tag, tags of different versions,
    /// or an `If-None-Match` other than `*` (a PUT replaces the whole list, so only "not at all" makes sense).
    package static func writeCondition(ifMatch: String?, ifNoneMatch: String?) -> Result<WritePrecondition, HTTPError> {
        switch (ifMatch, ifNoneMatch) {
        case (nil, nil):
            return .success(.none)
        case (.some, .some):
            return .failure(ErrorCode.conflictingPreconditions.error("If-Match and If-None-Match: send one of them"))
        case let (ifMatch?, nil):
            if ifMatch.trimmingSpaces == "*" {
                return .success(.exists)
            }
            // A list is fine as long as every tag names the same version (`"5", "5-gzip"`); empty
            // elements are ignored (RFC 9110 section 5.6.1.2).
            let malformed = ErrorCode.malformedIfMatch.error("If-Match: \(quoted(ifMatch)) is not a version in quotes (\"5\") or *")
            var versions: Set<Int> = []
            for tag in ifMatch.split(separator: ",", omittingEmptySubsequences: false) where !tag.trimmingSpaces.isEmpty {
                guard let version = entityTag(tag) else { return .failure(malformed) }
                versions.insert(version)
            }
            guard let version = versions.first else { return .failure(malformed) }
            guard versions.count == 1 else {
                return .failure(ErrorCode.malformedIfMatch.error("If-Match: \(quoted(ifMatch)) names several versions; name one (\"5\")"))
            }
            return .success(.version(version))
        case let (nil, ifNoneMatch?):
            guard ifNoneMatch.trimmingSpaces == "*" else {
                return .failure(ErrorCode.malformedIfNoneMatch.error("If-None-Match: \(quoted(ifNoneMatch)); a PUT understands only * (create, never replace)"))
            }
            return .success(.absent)
        }
    }
}


/// A list's events go out on an HTTP stream as Server-Sent Events (`event: patch`, docs/PROTOCOL.md),
/// framed by the HTTP layer's one SSE framer once per event (its id and the head of its JSON), with
/// its tail framed once per changeset: every stream queues the same bytes by reference, and the
/// tail counts once in the server's stream budget.
extension HTTPStream: EventSink {
    public func send(_ event: ListEvent) -> Bool {
        let framed = event.framed(by: FramedEvent.init)
        guard let shared = framed.shared else { return write(framed.start) }
        return write(framed.start, shared: shared)
    }
}

/// An event framed for SSE: its own start, and its tail shared by every event of its changeset.
final class FramedEvent: Sendable {
    let start: [UInt8]
    let shared: SharedBytes?

    init(_ event: ListEvent) {
        let tail = event.tail.framed { FramedTail(ServerSentEvent.encodeEnd(data: $0).map(SharedBytes.init)) }
        if let shared = tail.bytes, let start = ServerSentEvent.encodeStart(id: event.id, event: "patch", data: event.head) {
            self.start = start
            self.shared = shared
        } else {
            // JSON with a line break (never the engine's): the event framed whole, unshared.
            start = ServerSentEvent.encode(id: event.id, event: "patch", data: event.data)
            shared = nil
        }
    }
}

/// An event tail framed for SSE; nil when it cannot be framed apart.
final class FramedTail: Sendable {
    let bytes: SharedBytes?

    init(_ bytes: SharedBytes?) {
        self.bytes = bytes
    }
}

extension SessionKeys {
    /// The verified session of a request's cookie, or nil (no cookie, or one the server did not mint).
    func session(from request: HTTPRequest) -> String? {
        request.cookie(sessionCookieName).flatMap(sessionID(fromCookie:))
    }
}

/// Base64url without padding (RFC 4648 section 5): what cookies and button values carry of bytes.
enum Base64URL {
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of `text`, nil when it is not base64url.
    static func decode(_ text: some StringProtocol) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
