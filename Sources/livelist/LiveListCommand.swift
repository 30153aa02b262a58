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
            Every option falls back to an environment variable (LIVELIST_HOST, LIVELIST_PORT, LIVELIST_PUBLIC,
            LIVELIST_TEMPLATES, LIVELIST_DATA, LIVELIST_DATABASE_URL, LIVELIST_WRITE_TOKEN, LIVELIST_READ_TOKEN, LIVELIST_METRICS_TOKEN,
            LIVELIST_LOG_LEVEL), then to its default. With a database URL, several livelist processes share
            their lists on one PostgreSQL (docs/DEPLOYMENT.md). Without a write token, only loopback clients that came through no proxy may PUT
            or DELETE; without a metrics token, only they may read /metrics.
            """
    )

    @Option(help: "The address to listen on (env LIVELIST_HOST).")
    var host = env("LIVELIST_HOST") ?? "127.0.0.1"

    @Option(help: "The port; 0 picks a free one (env LIVELIST_PORT).")
    var port = Int(env("LIVELIST_PORT") ?? "") ?? 8080

    @Option(name: .customLong("public"), help: "A directory of static files served at the root instead of the built-in ones (env LIVELIST_PUBLIC).")
    var publicDirectory: String?

    @Option(name: .customLong("templates"), help: "A directory of Mustache page templates used instead of the built-in ones (env LIVELIST_TEMPLATES).")
    var templatesDirectory: String?

    @Option(name: .customLong("data"), help: "Where lists are stored (env LIVELIST_DATA).")
    var dataDirectory = env("LIVELIST_DATA") ?? "data"

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

    @Option(help: "trace, debug, info, notice, warning, error or critical (env LIVELIST_LOG_LEVEL).")
    var logLevel = env("LIVELIST_LOG_LEVEL") ?? "info"

    @Option(help: "text, json or logfmt: one line per entry on standard error, with RFC 3339 timestamps (env LIVELIST_LOG_FORMAT; default text).")
    var logFormat = env("LIVELIST_LOG_FORMAT") ?? "text"

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
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("--log-level: \(logLevel) is not one of trace, debug, info, notice, warning, error, critical")
        }
        guard let format = LogFormat(rawValue: logFormat) else {
            throw ValidationError("--log-format (LIVELIST_LOG_FORMAT): \(logFormat) is not one of text, json, logfmt")
        }
        LoggingSystem.bootstrap { label in LineLogHandler(label: label, format: format, logLevel: level) }
        let logger = Logger(label: "livelist")

        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.publicDirectory = (publicDirectory ?? env("LIVELIST_PUBLIC")).flatMap { $0.isEmpty ? nil : $0 }
        configuration.templatesDirectory = (templatesDirectory ?? env("LIVELIST_TEMPLATES")).flatMap { $0.isEmpty ? nil : $0 }
        configuration.dataDirectory = dataDirectory
        do {
            // Each token also from a file (NAME_FILE), as Docker and Kubernetes secrets are mounted.
            func token(_ flag: String?, _ name: String) throws(StartupError) -> String? {
                try ServerConfiguration.secret((flag ?? env(name)).flatMap { $0.isEmpty ? nil : $0 }, name,
                                               file: env(name + "_FILE").flatMap { $0.isEmpty ? nil : $0 })
            }
            configuration.writeToken = try token(writeToken, "LIVELIST_WRITE_TOKEN")
            configuration.readToken = try token(readToken, "LIVELIST_READ_TOKEN")
            configuration.metricsToken = try token(metricsToken, "LIVELIST_METRICS_TOKEN")
            configuration.sessionSecrets = try ServerConfiguration.sessionSecrets(
                env("LIVELIST_SESSION_SECRETS").flatMap { $0.isEmpty ? nil : $0 },
                file: env("LIVELIST_SESSION_SECRETS_FILE").flatMap { $0.isEmpty ? nil : $0 })
        } catch {
            throw ValidationError(error.description)
        }
        configuration.heartbeat = .milliseconds(Int(heartbeat * 1000))
        if let text = (accessRecheck ?? env("LIVELIST_ACCESS_RECHECK")).flatMap({ $0.isEmpty ? nil : $0 }) {
            do {
                configuration.accessRecheckInterval = try ServerConfiguration.accessRecheckInterval(text, name: "--access-recheck (LIVELIST_ACCESS_RECHECK)")
            } catch {
                throw ValidationError(error.description)
            }
        }
        configuration.maximumBodyBytes = maxBody
        configuration.maximumActionBodyBytes = maxActionBody
        do {
            configuration.actionPace = try ServerConfiguration.actionPace(
                rate: (actionRate ?? env("LIVELIST_ACTION_RATE")).flatMap { $0.isEmpty ? nil : $0 },
                burst: (actionBurst ?? env("LIVELIST_ACTION_BURST")).flatMap { $0.isEmpty ? nil : $0 },
                rateName: "--action-rate (LIVELIST_ACTION_RATE)", burstName: "--action-burst (LIVELIST_ACTION_BURST)")
        } catch {
            throw ValidationError(error.description)
        }
        configuration.bodyBudgetBytes = bodyBudget
        configuration.maximumConnections = maxConnections
        configuration.limits.maximumJSONLists = maxLists
        configuration.limits.listLimits.maximumCells = maxCells
        configuration.lists.logCount = logCount
        guard windowAbove >= 0 else {
            throw ValidationError("--window-above: \(windowAbove) is negative; give a number of cells, or 0 to never window lists")
        }
        configuration.lists.options.windowAbove = windowAbove > 0 ? windowAbove : nil
        configuration.isSecure = secureCookies || env("LIVELIST_SECURE_COOKIES") == "1"
        configuration.tlsCertificate = (tlsCert ?? env("LIVELIST_TLS_CERT")).flatMap { $0.isEmpty ? nil : $0 }
        configuration.tlsKey = (tlsKey ?? env("LIVELIST_TLS_KEY")).flatMap { $0.isEmpty ? nil : $0 }
        guard maxActionBody >= 0 else {
            throw ValidationError("--max-action-body must not be negative")
        }
        guard bodyBudget >= maxBody else {
            throw ValidationError("--body-budget (\(bodyBudget)) must be at least --max-body (\(maxBody)), or no largest body could ever be read")
        }
        guard maxConnections > 0 else {
            throw ValidationError("--max-connections must be positive")
        }
        guard reservedConnections >= 0 else {
            throw ValidationError("--reserved-connections must not be negative")
        }
        configuration.reservedConnections = reservedConnections
        if let text = eventLoops.map(String.init) ?? env("LIVELIST_EVENT_LOOPS").flatMap({ $0.isEmpty ? nil : $0 }) {
            guard let loops = Int(text), ServerConfiguration.eventLoopRange.contains(loops) else {
                let range = ServerConfiguration.eventLoopRange
                throw ValidationError("--event-loops (LIVELIST_EVENT_LOOPS): \(text) is not a number of loops from \(range.lowerBound) to \(range.upperBound)")
            }
            configuration.eventLoops = loops
        }
        if (configuration.tlsCertificate == nil) != (configuration.tlsKey == nil) {
            throw ValidationError("--tls-cert and --tls-key go together")
        }
        configuration.trustedProxies = Set(trustedProxy + (env("LIVELIST_TRUSTED_PROXIES") ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty })
        configuration.errorLog = { line in logger.error("\(line)") }
        configuration.warningLog = { line in logger.warning("\(line)") }
        if accessLog || env("LIVELIST_ACCESS_LOG") == "1" {
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
        if let text = (databaseURL ?? env("LIVELIST_DATABASE_URL")).flatMap({ $0.isEmpty ? nil : $0 }) {
            let url: DatabaseURL
            do {
                url = try DatabaseURL(
                    text, passwordFile: env("LIVELIST_DATABASE_PASSWORD_FILE").flatMap { $0.isEmpty ? nil : $0 },
                    environment: ProcessInfo.processInfo.environment)
            } catch {
                throw ValidationError("--database-url: \(error)")
            }
            for warning in url.warnings {
                logger.warning("\(warning)")
            }
            var options = PostgresListStore.Options()
            options.maximumJSONLists = maxLists
            options.keptVersions = logCount
            if let text = (databasePool ?? env("LIVELIST_DATABASE_POOL")).flatMap({ $0.isEmpty ? nil : $0 }) {
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

func env(_ name: String) -> String? {
    ProcessInfo.processInfo.environment[name]
}
