import Foundation
import LiveListEngine
import LiveListHTTP
#if canImport(Glibc)
import Glibc
#endif

/// `GET /healthz`, `GET /readyz` and `GET /metrics`: liveness, readiness, and Prometheus text with
/// stable names. On a shared store (several nodes on one database) `/healthz` and `/readyz` say the
/// database's state; with the embedded store both are the plain `ok` of ``healthz()``.
struct HealthRoutes: Sendable {
    let registry: ListRegistry
    let metrics: Metrics
    let server: ServerBox
    let configuration: ServerConfiguration
    let sessions: SessionTable
    let pacing: Pacing
    let actionKeys: ActionKeys
    let pageCache: PageCache
    let signIns: SignIns
    let trustedProxies: TrustedProxies
    let liveQueries: LiveQueries

    /// `GET /healthz`: with a shared store, ``storeHealthz()``; else the plain `ok` of ``healthz()``.
    func liveness() -> HTTPResponse {
        registry.isStoreShared ? storeHealthz() : Self.healthz()
    }

    /// `GET /readyz`: with a shared store, ``readyz()``; else the plain `ok`.
    func readiness() -> HTTPResponse {
        registry.isStoreShared ? readyz() : Self.healthz()
    }

    /// `GET /healthz`: 200 while the process serves, whatever the database does, with the database's
    /// state in the body (`ok`, then `database: ok` or `database: unreachable …`), so that a restarting
    /// database does not get healthy nodes restarted.
    func storeHealthz() -> HTTPResponse {
        var response = HTTPResponse.text("ok\n\(registry.storeHealth.description)\n")
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// `GET /readyz`: 200 while the node can serve writes, 503 with `Retry-After` while its database
    /// is unreachable, so that a proxy routes away from it.
    func readyz() -> HTTPResponse {
        let health = registry.storeHealth
        var response = HTTPResponse.text("\(health.isReachable ? "ready" : "not ready")\n\(health.description)\n")
        if !health.isReachable {
            response.status = .serviceUnavailable
            response.headers.set("Retry-After", "2")
        }
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// `GET /metrics`: with a metrics token, for requests that carry it; without one, for loopback
    /// clients through no proxy only, as writes are.
    func serveMetrics(_ request: HTTPRequest) async -> HTTPResponse {
        if let refusal = WriteRoutes.refuseUnlessAuthorized(request, token: configuration.metricsToken, what: "metrics", tokenName: "metrics token",
                                                             forbidden: ErrorCode.metricsNeedToken.error("this server shows /metrics only to loopback clients until a metrics token is configured (--metrics-token)"),
                                                             port: server.get()?.port ?? configuration.port)
        {
            return refusal
        }
        return await metricsResponse()
    }

    /// `GET /healthz`: `ok` while the server serves.
    static func healthz() -> HTTPResponse {
        var response = HTTPResponse.text("ok\n")
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// Prometheus text with stable names.
    func metricsResponse() async -> HTTPResponse {
        var lines: [String] = []
        func metric(_ name: String, _ type: String, _ help: String, _ values: [(String, Int)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for (labels, value) in values {
                lines.append("\(name)\(labels) \(value)")
            }
        }
        let http = server.get()?.statistics ?? HTTPServerStatistics()
        metric("livelist_connections_open", "gauge", "Open connections.", [("", http.connectionsOpen)])
        metric("livelist_connections_accepted_total", "counter", "Connections accepted.", [("", http.connectionsAccepted)])
        metric("livelist_connections_refused_total", "counter", "Connections refused at the connection limit.", [("", http.connectionsRefused)])
        metric("livelist_requests_total", "counter", "Requests parsed.", [("", http.requests)])
        metric("livelist_protocol_errors_total", "counter", "Requests refused by the HTTP parser.", [("", http.protocolErrors)])
        metric("livelist_streams_overflowed_total", "counter", "Streams closed for exceeding their write backlog.", [("", http.streamsOverflowed)])
        metric("livelist_streams_closed_total", "counter",
               "Event streams ended, by reason: closed (by the server, after what was queued), peer_gone (the client left), "
                   + "backlog_exceeded (a reader too far behind), write_timeout (a reader that took nothing for the write timeout), "
                   + "server_shutdown, write_failed (a send failed on the server's side).",
               HTTPStreamCloseReason.allCases.map { ("{reason=\"\($0.name)\"}", http.streamsClosed[$0] ?? 0) })
        metric("livelist_stream_writes_deferred_total", "counter",
               "Writes to event streams refused while the stream output budget was spent (each stream stays open and gets one catch-up later).",
               [("", http.streamWritesDeferred)])
        let own = metrics.snapshot
        metric("livelist_streams_open", "gauge", "Open event streams.", [("", own.streams)])
        metric("livelist_streams_total", "counter", "Event streams opened.", [("", own.streamsTotal)])
        metric("livelist_responses_total", "counter", "Responses by status.",
               own.statuses.sorted { $0.key < $1.key }.map { ("{status=\"\($0.key)\"}", $0.value) })
        metric("livelist_sessions", "gauge", "Sessions whose script connected.", [("", sessions.count)])
        metric("livelist_session_bytes", "gauge", "Approximate memory of the session table.", [("", sessions.approximateBytes)])
        var totals = ListCounters()
        let lists = await registry.allLists()
        for list in lists {
            let counters = await list.counters
            totals.changesets += counters.changesets
            totals.eventsSent += counters.eventsSent
            totals.bytesSent += counters.bytesSent
            totals.resetsSent += counters.resetsSent
            totals.coalescedViewers += counters.coalescedViewers
        }
        metric("livelist_lists", "gauge", "Lists served.", [("", lists.count)])
        metric("livelist_list_names", "gauge", "Names the registry holds: lists, deleted lists, names that streams wait on, and the versions of names that have none.", [("", await registry.nameCount)])
        metric("livelist_stream_queued_bytes", "gauge", "Bytes queued for event streams (bytes that streams share counted once).", [("", server.get()?.streamBytesQueued ?? 0)])
        metric("livelist_request_body_bytes", "gauge", "Bytes of request bodies held.", [("", server.get()?.bodyBytesHeld ?? 0)])
        metric("livelist_actions_paced_total", "counter", "Actions refused for their pace (429).", [("", metrics.pacedActions)])
        metric("livelist_untrusted_forwarded_total", "counter", "Requests that carried X-Forwarded-For or Forwarded from a peer that is not a trusted proxy.",
               [("", trustedProxies.untrustedForwarded)])
        let keys = actionKeys.held
        metric("livelist_client_records", "gauge", "Records kept per client, by kind, each bounded: idempotency keys of actions (and the places of their order), pace buckets, verified session cookies, cached pages, ended sign-ins, wrong sign-in attempts, visibility reports.",
               [("{kind=\"action_keys\"}", keys.keys), ("{kind=\"action_key_places\"}", keys.places), ("{kind=\"pace_buckets\"}", pacing.actions?.count ?? 0),
                ("{kind=\"verified_sessions\"}", pageCache.viewers.count), ("{kind=\"cached_pages\"}", pageCache.count),
                ("{kind=\"ended_sign_ins\"}", signIns.ended.count), ("{kind=\"sign_in_failure_buckets\"}", signIns.failureBuckets),
                ("{kind=\"visibility_buckets\"}", pacing.visibility?.count ?? 0)])
        let access = metrics.access
        metric("livelist_access_refusals_total", "counter", "Requests refused by a list's access rule or the read token, by kind (paced: actions refused for their pace).",
               [("{kind=\"unauthenticated\"}", access.unauthenticated), ("{kind=\"denied\"}", access.denied), ("{kind=\"paced\"}", metrics.pacedActions)])
        metric("livelist_revocations_total", "counter", "Revocations the app asked for (identity, list, session).", [("", access.revocations)])
        metric("livelist_streams_denied_total", "counter", "Lists of open streams ended by a revocation or a re-check.", [("", access.streamsDenied)])
        let queries = liveQueries.counters
        if !queries.isEmpty {
            func byList(_ value: (LiveQueryCounters) -> Int) -> [(String, Int)] { queries.map { ("{list=\"\($0.list)\"}", value($0.counters)) } }
            metric("livelist_live_query_statements_total", "counter", "Statements a live query ran, each for a batch of parameter sets.", byList(\.statements))
            metric("livelist_live_query_failures_total", "counter", "Runs of a live query that failed (the query, or a row that did not decode).", byList(\.failures))
            metric("livelist_live_query_changed_groups_total", "counter", "Parameter sets whose rows changed, each rendered once.", byList(\.changedGroups))
            metric("livelist_live_query_groups", "gauge", "Parameter sets whose rows this node holds.", byList(\.groups))
            metric("livelist_live_query_out_of_service", "gauge", "1 while a live query fails and its list answers 503.", byList(\.outOfService))
        }
        metric("livelist_changesets_total", "counter", "Changesets published.", [("", totals.changesets)])
        metric("livelist_patches_sent_total", "counter", "Events written to streams.", [("", totals.eventsSent)])
        metric("livelist_patch_bytes_sent_total", "counter", "Bytes of changeset JSON written to streams (without the event framing).", [("", totals.bytesSent)])
        metric("livelist_resets_sent_total", "counter", "Reset events written to streams.", [("", totals.resetsSent)])
        metric("livelist_coalesced_viewers_total", "counter", "Times a slow viewer was skipped and caught up later.", [("", totals.coalescedViewers)])
        metric("livelist_connections_reserved_total", "counter", "Connections accepted beyond the connection limit, on the reserve that serves requests but no streams.",
               [("", http.connectionsReserved)])
        metric("livelist_streams_refused_total", "counter", "Event streams refused because their connection was on the reserve (503 too_many_streams).",
               [("", http.streamsRefused)])
        requestDurations(&lines)
        storeMetrics(&lines)
        processMetrics(&lines)
        var response = HTTPResponse.text(lines.joined(separator: "\n") + "\n")
        response.headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// `livelist_request_duration_seconds`: a histogram per route (``Metrics/route(of:)``).
    private func requestDurations(_ lines: inout [String]) {
        lines.append("# HELP livelist_request_duration_seconds Time from a request's first byte to its answer, by route (a stream: to its head).")
        lines.append("# TYPE livelist_request_duration_seconds histogram")
        for (route, histogram) in metrics.durations.sorted(by: { $0.key < $1.key }) {
            var cumulative = 0
            for (index, count) in histogram.counts.enumerated() {
                cumulative += count
                let bound = index < Metrics.bucketBounds.count ? Self.prometheusNumber(Metrics.bucketBounds[index]) : "+Inf"
                lines.append("livelist_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(bound)\"} \(cumulative)")
            }
            lines.append("livelist_request_duration_seconds_sum{route=\"\(route)\"} \(Self.prometheusNumber(histogram.sum))")
            lines.append("livelist_request_duration_seconds_count{route=\"\(route)\"} \(cumulative)")
        }
    }

    /// The store: what it is, whether it answers, and its database pool's use when it has one.
    private func storeMetrics(_ lines: inout [String]) {
        func metric(_ name: String, _ type: String, _ help: String, _ values: [(String, Int)]) {
            lines += Self.metricLines(name, type, help, values)
        }
        let health = registry.storeHealth
        let kind = registry.isStoreShared ? "shared" : "embedded"
        metric("livelist_build_info", "gauge", "The running release: its version, the wire protocol and its store.",
               [("{version=\"\(LiveListApp.version)\",protocol=\"1\",store=\"\(kind)\"}", 1)])
        metric("livelist_store_up", "gauge", "Whether the store answers now (0 while a database is unreachable).", [("", health.isReachable ? 1 : 0)])
        if let pool = health.pool {
            metric("livelist_database_pool_connections", "gauge", "The most connections this node's database pool opens (--database-pool).",
                   [("", pool.capacity)])
            metric("livelist_database_pool_busy", "gauge", "Database pool connections held by store calls now.", [("", pool.busy)])
            metric("livelist_database_pool_waiting", "gauge", "Store calls waiting for a database pool connection now.", [("", pool.waiting)])
        }
    }

    /// The process's CPU time, memory, descriptors and start, as Prometheus' client libraries name them.
    private func processMetrics(_ lines: inout [String]) {
        func metric(_ name: String, _ type: String, _ help: String, _ values: [(String, Int)]) {
            lines += Self.metricLines(name, type, help, values)
        }
        #if canImport(Glibc)
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        lines.append("# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.")
        lines.append("# TYPE process_cpu_seconds_total counter")
        lines.append("process_cpu_seconds_total \(Self.prometheusNumber(cpu))")
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
            let fields = statm.split(separator: " ").compactMap { Int($0) }
            if fields.count >= 2 {
                metric("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", [("", fields[0] * page)])
                metric("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", [("", fields[1] * page)])
            }
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        metric("process_open_fds", "gauge", "Number of open file descriptors.", [("", open)])
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            metric("process_max_fds", "gauge", "Maximum number of open file descriptors.", [("", Int(clamping: limit.rlim_cur))])
        }
        lines.append("# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.")
        lines.append("# TYPE process_start_time_seconds gauge")
        lines.append("process_start_time_seconds \(Self.prometheusNumber(Self.processStart))")
        #endif
    }

    /// One metric family's lines.
    static func metricLines(_ name: String, _ type: String, _ help: String, _ values: [(String, Int)]) -> [String] {
        ["# HELP \(name) \(help)", "# TYPE \(name) \(type)"] + values.map { "\(name)\($0.0) \($0.1)" }
    }

    /// A number as Prometheus text writes it.
    static func prometheusNumber(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    /// When this process started, in seconds since 1970 (read once, when first asked: at the app's start).
    static let processStart: Double = Date().timeIntervalSince1970 - ProcessInfo.processInfo.systemUptime + processUptimeAtStart()

    private static func processUptimeAtStart() -> Double {
        // The process's start in seconds after boot (/proc/self/stat, field 22, in clock ticks).
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]) else { return 0 }
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
