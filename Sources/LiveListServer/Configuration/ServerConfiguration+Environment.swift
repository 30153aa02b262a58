import Foundation
import LiveListEngine
import LiveListHTTP

extension ServerConfiguration {
    /// The configuration that the `LIVELIST_*` environment variables describe, as the `livelist`
    /// executable reads them (the README's table), for an app that has no flags of its own:
    /// `LIVELIST_HOST`, `LIVELIST_PORT`, `LIVELIST_DATA`, `LIVELIST_PUBLIC`, `LIVELIST_TEMPLATES`,
    /// `LIVELIST_WRITE_TOKEN`, `LIVELIST_READ_TOKEN`, `LIVELIST_METRICS_TOKEN` (each also from a file named by
    /// the same name with `_FILE`, as Docker and Kubernetes secrets are), `LIVELIST_SESSION_SECRETS` or
    /// `LIVELIST_SESSION_SECRETS_FILE` (``sessionSecrets``), `LIVELIST_SECURE_COOKIES=1`, `LIVELIST_TLS_CERT`
    /// and `LIVELIST_TLS_KEY`, `LIVELIST_TRUSTED_PROXIES` (comma-separated), `LIVELIST_EVENT_LOOPS`,
    /// `LIVELIST_ACTION_RATE` and `LIVELIST_ACTION_BURST` (the actions' pace; a rate of 0 sets none),
    /// `LIVELIST_ACCESS_RECHECK` (seconds between re-checks of open streams' access), and for large
    /// audiences `LIVELIST_FAN_OUT_SLICE`, `LIVELIST_STREAM_SEND_BUFFER` and `LIVELIST_STREAM_OUTPUT_BUDGET`
    /// (``Sizing``).
    /// An unset or empty variable leaves its default. The server's failures (``errorLog``) go to the
    /// standard error, one line each.
    ///
    /// - Parameter environment: the variables; nil reads the process's environment.
    /// - Throws: `StartupError` when `LIVELIST_PORT` is not a port number, `LIVELIST_EVENT_LOOPS` not a
    ///   number of loops (1 to 1024), the pace or the re-check interval not a number, or only one of the
    ///   TLS files is set.
    public static func fromEnvironment(_ environment: [String: String]? = nil) throws(StartupError) -> ServerConfiguration {
        let environment = environment ?? ProcessInfo.processInfo.environment
        func value(_ name: String) -> String? {
            environment[name].flatMap { $0.isEmpty ? nil : $0 }
        }
        var configuration = ServerConfiguration()
        if let host = value("LIVELIST_HOST") { configuration.host = host }
        if let text = value("LIVELIST_PORT") {
            guard let port = Int(text), (0 ... 65_535).contains(port) else {
                throw StartupError("LIVELIST_PORT: \(text) is not a port number (0 to 65535)")
            }
            configuration.port = port
        }
        if let text = value("LIVELIST_EVENT_LOOPS") {
            guard let loops = Int(text), eventLoopRange.contains(loops) else {
                throw StartupError("LIVELIST_EVENT_LOOPS: \(text) is not a number of loops from \(eventLoopRange.lowerBound) to \(eventLoopRange.upperBound)")
            }
            configuration.eventLoops = loops
        }
        configuration.actionPace = try actionPace(rate: value("LIVELIST_ACTION_RATE"), burst: value("LIVELIST_ACTION_BURST"))
        if let text = value("LIVELIST_ACCESS_RECHECK") {
            configuration.accessRecheckInterval = try accessRecheckInterval(text)
        }
        for setting in Sizing.allCases {
            if let text = value(setting.variable) {
                try setting.apply(text, to: &configuration)
            }
        }
        if let data = value("LIVELIST_DATA") { configuration.dataDirectory = data }
        configuration.publicDirectory = value("LIVELIST_PUBLIC")
        configuration.templatesDirectory = value("LIVELIST_TEMPLATES")
        configuration.writeToken = try secret(value("LIVELIST_WRITE_TOKEN"), "LIVELIST_WRITE_TOKEN", file: value("LIVELIST_WRITE_TOKEN_FILE"))
        configuration.readToken = try secret(value("LIVELIST_READ_TOKEN"), "LIVELIST_READ_TOKEN", file: value("LIVELIST_READ_TOKEN_FILE"))
        configuration.metricsToken = try secret(value("LIVELIST_METRICS_TOKEN"), "LIVELIST_METRICS_TOKEN", file: value("LIVELIST_METRICS_TOKEN_FILE"))
        configuration.sessionSecrets = try sessionSecrets(value("LIVELIST_SESSION_SECRETS"), file: value("LIVELIST_SESSION_SECRETS_FILE"))
        configuration.isSecure = value("LIVELIST_SECURE_COOKIES") == "1"
        configuration.tlsCertificate = value("LIVELIST_TLS_CERT")
        configuration.tlsKey = value("LIVELIST_TLS_KEY")
        guard (configuration.tlsCertificate == nil) == (configuration.tlsKey == nil) else {
            throw StartupError("LIVELIST_TLS_CERT and LIVELIST_TLS_KEY go together")
        }
        configuration.errorLog = { line in
            FileHandle.standardError.write(Data("livelist: \(line)\n".utf8))
        }
        configuration.trustedProxies = Set((value("LIVELIST_TRUSTED_PROXIES") ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty })
        return configuration
    }

    /// A secret given directly (`direct`, from a flag or `NAME`) or in the file that `NAME_FILE` names:
    /// the file's text without its final line break. Both at once, an unreadable file or an empty one
    /// stop start-up: a secret from two sources, or none where one was meant, never passes silently.
    ///
    /// - Throws: `StartupError` naming the setting.
    package static func secret(_ direct: String?, _ name: String, file: String?) throws(StartupError) -> String? {
        guard let file else { return direct }
        guard direct == nil else {
            throw StartupError("\(name) is given both directly and in \(name)_FILE; give one")
        }
        guard let text = secretFileText(atPath: file) else {
            throw StartupError("\(name)_FILE: \(file) cannot be read")
        }
        guard !text.isEmpty else {
            throw StartupError("\(name)_FILE: \(file) is empty")
        }
        return text
    }

    /// The session secrets of `LIVELIST_SESSION_SECRETS` (comma-separated) or the file that
    /// `LIVELIST_SESSION_SECRETS_FILE` names (one per line; blank lines and lines starting with `#`
    /// skipped): each 64 hex digits (32 bytes) or more; the first signs, the others only verify. Nil
    /// when neither is set.
    ///
    /// - Throws: `StartupError` naming the setting when both are set, the file cannot be read, or a
    ///   secret is not hex of at least 32 bytes.
    package static func sessionSecrets(_ direct: String?, file: String?) throws(StartupError) -> [[UInt8]]? {
        let name = "LIVELIST_SESSION_SECRETS"
        guard let text = try secret(direct?.replacingOccurrences(of: ",", with: "\n"), name, file: file) else { return nil }
        var secrets: [[UInt8]] = []
        for (index, line) in text.split(whereSeparator: \.isNewline).enumerated() {
            let line = line.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard line.count >= 64, line.count % 2 == 0, let bytes = hexBytes(line) else {
                throw StartupError("\(name): secret \(index + 1) is not hex digits of at least 32 bytes (openssl rand -hex 32 makes one)")
            }
            secrets.append(bytes)
        }
        guard !secrets.isEmpty else {
            throw StartupError("\(name) holds no secret")
        }
        return secrets
    }

    /// The bytes that `text`'s hex digits (an even number of them) spell; nil for anything else.
    private static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = TargetDecoder.hexValue(digits[index]), let low = TargetDecoder.hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// The re-check interval from its text, in seconds: 1 to 86,400.
    ///
    /// - Throws: `StartupError` naming the setting when the text is not a number of seconds in range.
    package static func accessRecheckInterval(_ text: String, name: String = "LIVELIST_ACCESS_RECHECK") throws(StartupError) -> Duration {
        guard let seconds = Double(text), seconds.isFinite, (1 ... 86_400).contains(seconds) else {
            throw StartupError("\(name): \(text) is not a number of seconds from 1 to 86400")
        }
        return .milliseconds(Int(seconds * 1000))
    }

    /// The settings that size a node for a large audience (docs/DEPLOYMENT.md, "Sizing nodes"), each
    /// a flag of `livelist serve` and a variable.
    package enum Sizing: CaseIterable, Sendable {
        /// ``ListConfiguration/fanOutSlice``: 1 to 1,000,000 streams.
        case fanOutSlice
        /// ``streamSendBufferBytes``: 0 (the kernel's own), or 4 KiB to 64 MiB.
        case streamSendBuffer
        /// ``streamOutputBudgetBytes``: 1 MiB to 64 GiB.
        case streamOutputBudget

        /// The environment variable.
        package var variable: String {
            switch self {
            case .fanOutSlice: "LIVELIST_FAN_OUT_SLICE"
            case .streamSendBuffer: "LIVELIST_STREAM_SEND_BUFFER"
            case .streamOutputBudget: "LIVELIST_STREAM_OUTPUT_BUDGET"
            }
        }

        /// The flag of `livelist serve`.
        package var flag: String {
            switch self {
            case .fanOutSlice: "--fan-out-slice"
            case .streamSendBuffer: "--stream-send-buffer"
            case .streamOutputBudget: "--stream-output-budget"
            }
        }

        /// Sets this setting of `configuration` from `text`, a whole number in range.
        ///
        /// - Throws: `StartupError` naming `name` (the variable when nil) and the range.
        package func apply(_ text: String, to configuration: inout ServerConfiguration, name: String? = nil) throws(StartupError) {
            let name = name ?? variable
            func number(_ range: ClosedRange<Int>, _ what: String) throws(StartupError) -> Int {
                guard let number = Int(text), range.contains(number) else {
                    throw StartupError("\(name): \(text) is not a number of \(what) from \(range.lowerBound) to \(range.upperBound)")
                }
                return number
            }
            switch self {
            case .fanOutSlice:
                configuration.lists.fanOutSlice = try number(1 ... 1_000_000, "streams")
            case .streamSendBuffer:
                let bytes = try number(0 ... 64 << 20, "bytes")
                guard bytes == 0 || bytes >= 4 << 10 else {
                    throw StartupError("\(name): \(text) bytes is too small a send buffer; give 4096 or more, or 0 for the kernel's own")
                }
                configuration.streamSendBufferBytes = bytes
            case .streamOutputBudget:
                configuration.streamOutputBudgetBytes = try number(1 << 20 ... 64 << 30, "bytes")
            }
        }
    }

    /// The actions' pace from the text of a rate (per second; 0 for none) and a burst, each nil for
    /// its default (``ActionPace/standard``).
    ///
    /// - Throws: `StartupError` naming the setting that is not a number in range.
    package static func actionPace(rate: String?, burst: String?, rateName: String = "LIVELIST_ACTION_RATE",
                                   burstName: String = "LIVELIST_ACTION_BURST") throws(StartupError) -> ActionPace? {
        var pace = ActionPace.standard
        if let rate {
            guard let value = Double(rate), value.isFinite, value >= 0 else {
                throw StartupError("\(rateName): \(rate) is not a number of actions per second (0 for no pace)")
            }
            if value == 0 { return nil }
            pace.rate = value
        }
        if let burst {
            guard let value = Int(burst), value >= 1 else {
                throw StartupError("\(burstName): \(burst) is not a number of actions (1 or more)")
            }
            pace.burst = value
        }
        return pace
    }
}
