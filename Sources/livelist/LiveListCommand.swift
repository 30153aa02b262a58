import ArgumentParser
import Foundation
import LiveListPostgres
import LiveListServer
import Logging

/// `livelist`: serves (the default subcommand, `livelist serve`) or checks a running server's health
/// (`livelist healthcheck`, the Docker `HEALTHCHECK`).
@main
struct LiveListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "livelist",
        abstract: "Serve live lists: HTML pages kept in sync over Server-Sent Events, JSON for scripts.",
        discussion: """
            Without a subcommand, livelist serves: `livelist --port 9000` is `livelist serve --port 9000`.
            `livelist serve --help` lists the server's flags.
            """,
        subcommands: [ServeCommand.self, HealthcheckCommand.self, MigrateCommand.self],
        defaultSubcommand: ServeCommand.self
    )
}

/// `livelist serve`: serves the demo lists and any JSON list that a script PUTs.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve live lists: HTML pages kept in sync over Server-Sent Events, JSON for scripts.",
        discussion: """
            A flag wins over its environment variable (LIVELIST_HOST, LIVELIST_PORT, LIVELIST_PUBLIC, LIVELIST_TEMPLATES,
            LIVELIST_DATA, LIVELIST_DATABASE_URL, LIVELIST_WRITE_TOKEN, LIVELIST_READ_TOKEN, LIVELIST_METRICS_TOKEN,
            LIVELIST_LOG_LEVEL and the others named below), which wins over the default; a variable that does not
            read stops start-up, naming it, as a flag does. With a database URL, several livelist processes share
            their lists on one PostgreSQL (docs/DEPLOYMENT.md). Without a write token, only loopback clients that came through no proxy may PUT
            or DELETE; without a metrics token, only they may read /metrics.
            """
    )

    @Option(help: "The address to listen on (env LIVELIST_HOST; default 127.0.0.1).")
    var host: String?

    @Option(help: "The port; 0 picks a free one (env LIVELIST_PORT; default 8080).")
    var port: Int?

    @Option(name: .customLong("public"), help: "A directory of static files served at the root instead of the built-in ones (env LIVELIST_PUBLIC).")
    var publicDirectory: String?

    @Option(name: .customLong("templates"), help: "A directory of Mustache page templates used instead of the built-in ones (env LIVELIST_TEMPLATES).")
    var templatesDirectory: String?

    @Option(name: .customLong("data"), help: "Where lists are stored (env LIVELIST_DATA; default data).")
    var dataDirectory: String?

    @Option(help: "Keep lists in PostgreSQL, shared by every node given the same URL, instead of --data: postgres://USER[:PASSWORD]@HOST:PORT/DATABASE?sslmode=disable (env LIVELIST_DATABASE_URL).")
    var databaseURL: String?

    @Option(help: "Seconds to wait for the database at start-up before giving up.")
    var databaseWait: Double = 30

    @Option(help: "The most connections this node's pool opens to the database, 2 to 1000 (env LIVELIST_DATABASE_POOL; default 16); a pooler must allow each node two more (docs/DEPLOYMENT.md).")
    var databasePool: String?

    @Option(help: "Bearer token required for PUT and DELETE (env LIVELIST_WRITE_TOKEN).")
    var writeToken: String?

    @Option(help: "Bearer token required to read JSON-driven lists; browsers sign in once at /signin (env LIVELIST_READ_TOKEN).")
    var readToken: String?

    @Option(help: "Seconds between re-checks of every open event stream's access (env LIVELIST_ACCESS_RECHECK; default 60).")
    var accessRecheck: String?

    @Option(help: "Bearer token required for GET /metrics (env LIVELIST_METRICS_TOKEN).")
    var metricsToken: String?

    @Option(help: "trace, debug, info, notice, warning, error or critical (env LIVELIST_LOG_LEVEL; default info).")
    var logLevel: String?

    @Option(help: "text, json or logfmt: one line per entry on standard error, with RFC 3339 timestamps (env LIVELIST_LOG_FORMAT; default text).")
    var logFormat: String?

    @Option(help: "Seconds between heartbeat comments on event streams.")
    var heartbeat: Double = 15

    @Option(help: "The largest PUT body, in bytes.")
    var maxBody = 8 << 20

    @Option(help: "The largest action body (POST /lists/NAME/actions), in bytes.")
    var maxActionBody = 64 << 10

    @Option(help: "Actions per second a session, and a client address, may keep sending after a burst; past it 429 with Retry-After; 0 for no pace (env LIVELIST_ACTION_RATE; default 10).")
    var actionRate: String?

    @Option(help: "Actions a session, and a client address, may send at once before the rate applies (env LIVELIST_ACTION_BURST; default 40).")
    var actionBurst: String?

    @Option(help: "The most bytes of request bodies held at once over all connections; past it, 503 with Retry-After.")
    var bodyBudget = 64 << 20

    @Option(help: "The most connections at once, event streams included (kept below the file limit; 503 when full).")
    var maxConnections = 20_000

    @Option(help: "Connections beyond --max-connections that serve requests but no event stream, so that probes, writes and /metrics are answered on a full node.")
    var reservedConnections = 64

    @Option(help: "Event loops (threads) serving connections; default one per processor (env LIVELIST_EVENT_LOOPS).")
    var eventLoops: Int?

    @Option(help: "The most JSON-driven lists.")
    var maxLists = 1_000

    @Option(help: "The most cells in one JSON-driven list.")
    var maxCells = 100_000

    @Option(help: "The most changesets kept per list for resuming streams.")
    var logCount = 256

    @Option(help: "JSON-driven lists of more cells than this are windowed in the browser (docs/PROTOCOL.md, \"Windowed lists\"); 0 never windows them.")
    var windowAbove = 1_000

    @Option(help: "The most event streams one change is written to before the list answers other work; a stream not yet reached when the next change comes gets one changeset for both (env LIVELIST_FAN_OUT_SLICE; default 1000).")
    var fanOutSlice: String?

    @Option(help: "The kernel's send buffer of an event stream's socket in bytes; 0 keeps the kernel's own (env LIVELIST_STREAM_SEND_BUFFER; default 65536).")
    var streamSendBuffer: String?

    @Option(help: "The most bytes queued for all event streams together; past it streams are written to as they drain (env LIVELIST_STREAM_OUTPUT_BUDGET; default 268435456).")
    var streamOutputBudget: String?

    @Flag(help: "Serve only JSON lists, without the demo lists.")
    var noDemo = false

    @Flag(help: "Mark the session cookie Secure (behind a proxy that terminates TLS; env LIVELIST_SECURE_COOKIES=1).")
    var secureCookies = false

    @Option(help: "PEM certificate chain: serve HTTPS with --tls-key (env LIVELIST_TLS_CERT).")
    var tlsCert: String?

    @Option(help: "PEM private key of --tls-cert (env LIVELIST_TLS_KEY).")
    var tlsKey: String?

    @Flag(help: "Log each request (client, method, target, protocol, status, bytes, duration, user agent) and each event stream's end (duration, bytes, why) at info level (env LIVELIST_ACCESS_LOG=1).")
    var accessLog = false

    @Option(help: "A reverse proxy's address whose X-Forwarded-For names the client in the access log (repeatable; env LIVELIST_TRUSTED_PROXIES, comma-separated).")
    var trustedProxy: [String] = []

    @Option(help: "Interval of the demo lists' timers, in seconds.")
    var demoInterval: Double = 1

    mutating func run() async throws {
        let logLevel = given(self.logLevel, "LIVELIST_LOG_LEVEL") ?? "info"
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("--log-level (LIVELIST_LOG_LEVEL): \(logLevel) is not one of trace, debug, info, notice, warning, error, critical")
        }
        let logFormat = given(self.logFormat, "LIVELIST_LOG_FORMAT") ?? "text"
        guard let format = LogFormat(rawValue: logFormat) else {
            throw ValidationError("--log-format (LIVELIST_LOG_FORMAT): \(logFormat) is not one of text, json, logfmt")
        }
        LoggingSystem.bootstrap { label in LineLogHandler(label: label, format: format, logLevel: level) }
        let logger = Logger(label: "livelist")
        let configuration: ServerConfiguration
        do {
            configuration = try serverConfiguration()
        } catch {
            throw ValidationError(error.description)
        }
        try await serve(configuration, format: format, logger: logger)
    }

    /// The server's configuration in one place: the `LIVELIST_*` variables over the defaults
    /// (``ServerConfiguration/fromEnvironment(_:)``, which an app without flags reads too), then each
    /// flag given over its variable.
    func serverConfiguration() throws(StartupError) -> ServerConfiguration {
        // A variable whose flag is given is not read at all: the flag wins even over a variable that
        // would not read.
        var environment = ProcessInfo.processInfo.environment
        let flagged: [(given: Bool, variable: String)] = [
            (host != nil, "LIVELIST_HOST"), (port != nil, "LIVELIST_PORT"), (dataDirectory != nil, "LIVELIST_DATA"),
            (publicDirectory != nil, "LIVELIST_PUBLIC"), (templatesDirectory != nil, "LIVELIST_TEMPLATES"),
            (writeToken != nil, "LIVELIST_WRITE_TOKEN"), (readToken != nil, "LIVELIST_READ_TOKEN"),
            (metricsToken != nil, "LIVELIST_METRICS_TOKEN"), (accessRecheck != nil, "LIVELIST_ACCESS_RECHECK"),
            (eventLoops != nil, "LIVELIST_EVENT_LOOPS"), (tlsCert != nil, "LIVELIST_TLS_CERT"), (tlsKey != nil, "LIVELIST_TLS_KEY"),
            (actionRate != nil || actionBurst != nil, "LIVELIST_ACTION_RATE"), (actionRate != nil || actionBurst != nil, "LIVELIST_ACTION_BURST"),
        ] + sizing.map { (given: $0.text != nil, variable: $0.setting.variable) }
        for (given, variable) in flagged where given {
            environment[variable] = nil
        }
        var configuration = try ServerConfiguration.fromEnvironment(environment)
        if let host { configuration.host = host }
        if let port {
            guard (0 ... 65_535).contains(port) else { throw StartupError("--port: \(port) is not a port number (0 to 65535)") }
            configuration.port = port
        }
        if let publicDirectory { configuration.publicDirectory = publicDirectory.isEmpty ? nil : publicDirectory }
        if let templatesDirectory { configuration.templatesDirectory = templatesDirectory.isEmpty ? nil : templatesDirectory }
        if let dataDirectory { configuration.dataDirectory = dataDirectory }
        // A token given as a flag is checked against its file variable (NAME_FILE) as the variable is.
        func token(_ flag: String?, _ name: String, _ current: String?) throws(StartupError) -> String? {
            guard let flag, !flag.isEmpty else { return current }
            return try ServerConfiguration.secret(flag, name, file: given(nil, name + "_FILE"))
        }
        configuration.writeToken = try token(writeToken, "LIVELIST_WRITE_TOKEN", configuration.writeToken)
        configuration.readToken = try token(readToken, "LIVELIST_READ_TOKEN", configuration.readToken)
        configuration.metricsToken = try token(metricsToken, "LIVELIST_METRICS_TOKEN", configuration.metricsToken)
        configuration.heartbeat = .milliseconds(Int(heartbeat * 1000))
        if let accessRecheck {
            configuration.accessRecheckInterval = try ServerConfiguration.accessRecheckInterval(accessRecheck, name: "--access-recheck")
        }
        configuration.maximumBodyBytes = maxBody
        configuration.maximumActionBodyBytes = maxActionBody
        if actionRate != nil || actionBurst != nil {
            configuration.actionPace = try ServerConfiguration.actionPace(
                rate: given(actionRate, "LIVELIST_ACTION_RATE"), burst: given(actionBurst, "LIVELIST_ACTION_BURST"),
                rateName: "--action-rate (LIVELIST_ACTION_RATE)", burstName: "--action-burst (LIVELIST_ACTION_BURST)")
        }
        configuration.bodyBudgetBytes = bodyBudget
        configuration.maximumConnections = maxConnections
        configuration.limits.maximumJSONLists = maxLists
        configuration.limits.listLimits.maximumCells = maxCells
        configuration.lists.logCount = logCount
        guard windowAbove >= 0 else {
            throw StartupError("--window-above: \(windowAbove) is negative; give a number of cells, or 0 to never window lists")
        }
        configuration.lists.options.windowAbove = windowAbove > 0 ? windowAbove : nil
        if secureCookies { configuration.isSecure = true }
        if let tlsCert { configuration.tlsCertificate = tlsCert.isEmpty ? nil : tlsCert }
        if let tlsKey { configuration.tlsKey = tlsKey.isEmpty ? nil : tlsKey }
        guard maxActionBody >= 0 else {
            throw StartupError("--max-action-body must not be negative")
        }
        guard bodyBudget >= maxBody else {
            throw StartupError("--body-budget (\(bodyBudget)) must be at least --max-body (\(maxBody)), or no largest body could ever be read")
        }
        guard maxConnections > 0 else {
            throw StartupError("--max-connections must be positive")
        }
        guard reservedConnections >= 0 else {
            throw StartupError("--reserved-connections must not be negative")
        }
        configuration.reservedConnections = reservedConnections
        if let eventLoops {
            guard ServerConfiguration.eventLoopRange.contains(eventLoops) else {
                let range = ServerConfiguration.eventLoopRange
                throw StartupError("--event-loops: \(eventLoops) is not a number of loops from \(range.lowerBound) to \(range.upperBound)")
            }
            configuration.eventLoops = eventLoops
        }
        if (configuration.tlsCertificate == nil) != (configuration.tlsKey == nil) {
            throw StartupError("--tls-cert and --tls-key (LIVELIST_TLS_CERT and LIVELIST_TLS_KEY) go together")
        }
        configuration.trustedProxies.formUnion(trustedProxy)
        for (setting, text) in sizing {
            if let text {
                try setting.apply(text, to: &configuration, name: "\(setting.flag) (\(setting.variable))")
            }
        }
        return configuration
    }

    /// The flags that size a node for a large audience, with their texts.
    private var sizing: [(setting: ServerConfiguration.Sizing, text: String?)] {
        [(.fanOutSlice, fanOutSlice), (.streamSendBuffer, streamSendBuffer), (.streamOutputBudget, streamOutputBudget)]
    }

    /// Serves with `configuration`: its logs, the store (PostgreSQL with a database URL), the demo lists.
    private func serve(_ configuration: ServerConfiguration, format: LogFormat, logger: Logger) async throws {
        var configuration = configuration
        configuration.errorLog = { line in logger.error("\(line)") }
        configuration.warningLog = { line in logger.warning("\(line)") }
        if accessLog || given(nil, "LIVELIST_ACCESS_LOG") == "1" {
            let accessLogger = Logger(label: "livelist.access")
            configuration.accessLogEntries = { entry in
                // As text the line says it all; as JSON or logfmt, the fields do.
                guard format != .text else {
                    accessLogger.info("\(entry.line)")
                    return
                }
                var metadata: Logger.Metadata = ["event": .string(entry.event)]
                for (name, value) in entry.fields {
                    switch value {
                    case let .text(text): metadata[name] = .string(text)
                    case let .integer(number): metadata[name] = .stringConvertible(number)
                    case let .seconds(seconds): metadata[name] = .stringConvertible(seconds)
                    }
                }
                accessLogger.info("\(entry.event)", metadata: metadata)
            }
        }

        var store: (any ListStore)?
        var storeDescription = "data in \(configuration.dataDirectory)"
        if let text = given(databaseURL, "LIVELIST_DATABASE_URL") {
            let url = try readDatabaseURL(text)
            for warning in url.warnings {
                logger.warning("\(warning)")
            }
            var options = PostgresListStore.Options()
            options.maximumJSONLists = maxLists
            options.keptVersions = logCount
            if let text = given(databasePool, "LIVELIST_DATABASE_POOL") {
                do {
                    options.maximumConnections = try PostgresListStore.Options.poolSize(text, name: "--database-pool (LIVELIST_DATABASE_POOL)")
                } catch {
                    throw ValidationError(error.description)
                }
            }
            store = try await Self.connect(url, options: options, waiting: databaseWait, logger: logger)
            storeDescription = "lists in \(url)"
        }

        let app: LiveListApp
        do {
            app = try await LiveListApp(configuration: configuration, store: store)
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode(1)
        }
        var demos: [Demo] = []
        if !noDemo {
            do {
                demos = try await Demo.startAll(on: app, interval: .milliseconds(Int(demoInterval * 1000)), logger: logger)
            } catch {
                logger.critical("cannot start the demo lists: \(error)")
                throw ExitCode(1)
            }
        }
        let banner = "\(storeDescription), writes \(configuration.writeToken == nil ? "from loopback only" : "with the write token")"
            + (configuration.readToken == nil ? "" : ", reads of JSON lists with the read token")
        let listenHost = configuration.host
        let scheme = configuration.tlsCertificate == nil ? "http" : "https"
        try await app.run(announcing: false) { port in
            logger.info("LiveList serving on \(scheme)://\(listenHost):\(port) (\(banner), \(app.eventLoopBackend.map { "\($0)" } ?? "?") event loop)")
        }
        for demo in demos {
            demo.stop()
        }
        logger.info("LiveList stopped")
    }
}

extension ServeCommand {
    /// Connects to the database, trying again with backoff for `seconds` (a database that starts with
    /// the node, as in docker-compose.yml), then gives up with the last error.
    static func connect(_ url: DatabaseURL, options: PostgresListStore.Options, waiting seconds: Double, logger: Logger) async throws -> PostgresListStore {
        let deadline = ContinuousClock.now + .milliseconds(Int(max(0, seconds) * 1000))
        var pause = Duration.milliseconds(250)
        while true {
            do {
                return try await PostgresListStore.connect(url: url, options: options, logger: Logger(label: "livelist.postgres"))
            } catch {
                guard ContinuousClock.now + pause < deadline else {
                    logger.critical("cannot start: \(error)")
                    throw ExitCode(1)
                }
                logger.warning("waiting for the database: \(error)")
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(4))
            }
        }
    }
}

/// The database URL `text`, read as libpq reads it (with the process's `PG*` variables and
/// `LIVELIST_DATABASE_PASSWORD_FILE`); a refusal names `--database-url`.
func readDatabaseURL(_ text: String) throws -> DatabaseURL {
    do {
        return try DatabaseURL(text, passwordFile: given(nil, "LIVELIST_DATABASE_PASSWORD_FILE"), environment: ProcessInfo.processInfo.environment)
    } catch {
        throw ValidationError("--database-url: \(error)")
    }
}

/// A setting's text: the flag's when given, else the environment variable `name`'s; an empty text is none.
func given(_ flag: String?, _ name: String) -> String? {
    (flag ?? ProcessInfo.processInfo.environment[name]).flatMap { $0.isEmpty ? nil : $0 }
}
