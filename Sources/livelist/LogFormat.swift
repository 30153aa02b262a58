import Foundation
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// How the executable writes its log to standard error (`--log-format`, `LIVELIST_LOG_FORMAT`): one
/// line per entry, every line with an RFC 3339 timestamp in UTC to the millisecond.
///
/// - `text`: `2026-11-28T02:44:18.123Z info livelist: message key=value …`
/// - `json`: one JSON object per line: `time`, `level`, `logger`, `message`, then every field of the
///   entry (an access entry's `client`, `method`, `target`, `status`, `duration`, … as numbers where
///   they are numbers).
/// - `logfmt`: `time=… level=… logger=… msg="…" key=value …`, values quoted when they need it.
enum LogFormat: String, CaseIterable {
    case text, json, logfmt
}

/// A swift-log handler that writes ``LogFormat`` lines to standard error, each line in one `write(2)`.
struct LineLogHandler: LogHandler {
    let label: String
    let format: LogFormat
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { _, new in new } }
        if let error = event.error { fields["error"] = .string("\(error)") }
        let text = Self.line(time: Self.timestamp(), level: event.level, label: label, message: event.message.description, fields: fields, format: format)
        let bytes = Array((text + "\n").utf8)
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(2, raw.baseAddress! + offset, raw.count - offset)
                if written <= 0 {
                    if written < 0 && errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }

    /// One line of `format`. Field order: as given for the access log's entries (kept in `order`),
    /// else by name.
    static func line(time: String, level: Logger.Level, label: String, message: String, fields: Logger.Metadata, format: LogFormat) -> String {
        let names = fields.keys.sorted { (order[$0] ?? Int.max, $0) < (order[$1] ?? Int.max, $1) }
        switch format {
        case .text:
            let rest = names.map { "\($0)=\(logfmtValue(fields[$0]!))" }.joined(separator: " ")
            return "\(time) \(level) \(label): \(message)" + (rest.isEmpty ? "" : " " + rest)
        case .logfmt:
            var parts = ["time=\(time)", "level=\(level)", "logger=\(logfmtValue(.string(label)))", "msg=\(logfmtValue(.string(message)))"]
            parts += names.map { "\($0)=\(logfmtValue(fields[$0]!))" }
            return parts.joined(separator: " ")
        case .json:
            var text = "{\"time\":\(json(time)),\"level\":\(json(level.rawValue)),\"logger\":\(json(label)),\"message\":\(json(message))"
            for name in names where !["time", "level", "logger", "message"].contains(name) {
                text += ",\(json(name)):\(jsonValue(fields[name]!))"
            }
            return text + "}"
        }
    }

    /// The access log's fields in their order.
    private static let order: [String: Int] = Dictionary(uniqueKeysWithValues: [
        "event", "refusal", "rule", "client", "method", "target", "protocol", "status", "bytes", "duration", "user_agent", "connection", "reason",
    ].enumerated().map { ($1, $0) })

    /// Now as RFC 3339 in UTC, to the millisecond: `2026-11-28T02:44:18.123Z`.
    static func timestamp() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var seconds = spec.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(spec.tv_nsec / 1_000_000))
    }

    /// A JSON string.
    static func json(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// A metadata value as JSON: numbers stay numbers.
    private static func jsonValue(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case let .string(text): return json(text)
        case let .stringConvertible(convertible):
            if let number = convertible as? Int { return String(number) }
            if let number = convertible as? Double, number.isFinite { return String(number) }
            return json(convertible.description)
        case let .array(values): return "[" + values.map(jsonValue).joined(separator: ",") + "]"
        case let .dictionary(entries):
            return "{" + entries.sorted { $0.key < $1.key }.map { "\(json($0.key)):\(jsonValue($0.value))" }.joined(separator: ",") + "}"
        }
    }

    /// A logfmt value: bare when it is made of visible characters other than `"` and `=`, else quoted.
    private static func logfmtValue(_ value: Logger.Metadata.Value) -> String {
        let text = value.description
        let bare = !text.isEmpty && text.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F && $0 != "\"" && $0 != "=" && $0 != "\\" }
        return bare ? text : json(text)
    }
}
