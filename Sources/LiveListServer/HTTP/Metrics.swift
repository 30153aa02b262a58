import Foundation
import Synchronization
import LiveListEngine
import LiveListHTTP
#if canImport(Glibc)
import Glibc
#endif

/// Counters of the HTTP side, for `/metrics`.
final class Metrics: Sendable {
    private struct Held {
        var statuses: [Int: Int] = [:]
        var streams = 0
        var streamsTotal = 0
        var paced = 0
        var refusedUnauthenticated = 0
        var refusedDenied = 0
        var revocations = 0
        var streamsDenied = 0
        var durations: [String: Histogram] = [:]
    }

    /// Why the gate refused a request.
    enum Refusal {
        case unauthenticated, denied
    }

    func refused(_ refusal: Refusal) {
        held.withLock { held in
            switch refusal {
            case .unauthenticated: held.refusedUnauthenticated += 1
            case .denied: held.refusedDenied += 1
            }
        }
    }

    func revoked() {
        held.withLock { held in held.revocations += 1 }
    }

    func streamDenied() {
        held.withLock { held in held.streamsDenied += 1 }
    }

    var access: (unauthenticated: Int, denied: Int, revocations: Int, streamsDenied: Int) {
        held.withLock { held in (held.refusedUnauthenticated, held.refusedDenied, held.revocations, held.streamsDenied) }
    }

    private let held = Mutex(Held())

    func actionPaced() {
        held.withLock { held in held.paced += 1 }
    }

    var pacedActions: Int {
        held.withLock { held in held.paced }
    }

    func count(status: Int) {
        held.withLock { held in held.statuses[status, default: 0] += 1 }
    }

    /// Counts an answered request: its status, and the time it took (from its first byte to its
    /// answer) in its route's histogram.
    func count(_ request: HTTPRequest, status: Int) {
        let route = Self.route(of: request)
        let elapsed = request.elapsed
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let bucket = Self.bucketBounds.firstIndex { seconds <= $0 } ?? Self.bucketBounds.count
        held.withLock { held in
            held.statuses[status, default: 0] += 1
            var histogram = held.durations[route] ?? Histogram()
            histogram.counts[bucket] += 1
            histogram.sum += seconds
            held.durations[route] = histogram
        }
    }

    /// The upper bounds of the request-duration buckets, in seconds (and +Inf after them).
    static let bucketBounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct Histogram {
        var counts = [Int](repeating: 0, count: Metrics.bucketBounds.count + 1)
        var sum = 0.0
    }

    var durations: [String: Histogram] {
        held.withLock { $0.durations }
    }

    /// A route's label for the request-duration histogram: the server's own routes by name, the app's
    /// routes as `app`, static files as `static`; a bounded set, whatever the paths.
    static func route(of request: HTTPRequest) -> String {
        let segments = request.pathSegments
        guard let first = segments.first else { return "index" }
        switch (first, segments.count) {
        case ("lists", 2):
            return request.method == .GET || request.method == .HEAD ? "list" : "write"
        case ("lists", 3):
            switch segments[2] {
            case "events": return "list_events"
            case "changes": return "changes"
            case "cells": return "cells"
            case "actions": return "actions"
            default: return "other"
            }
        case ("events", 1): return "events"
        case ("events", 2): return "stream_change"
        case ("healthz", 1), ("readyz", 1), ("metrics", 1), ("signin", 1), ("signout", 1): return first
        case ("lists", _), ("events", _): return "other"
        default:
            return segments.last?.contains(".") == true && (request.method == .GET || request.method == .HEAD) ? "static" : "app"
        }
    }

    func streamOpened() {
        held.withLock { held in
            held.streams += 1
            held.streamsTotal += 1
        }
    }

    func streamClosed() {
        held.withLock { held in held.streams -= 1 }
    }

    var snapshot: (statuses: [Int: Int], streams: Int, streamsTotal: Int) {
        held.withLock { held in (held.statuses, held.streams, held.streamsTotal) }
    }
}

extension LiveListApp {
    /// `GET /metrics`: with a metrics token, for requests that carry it; without one, for loopback
    /// clients through no proxy only, as writes are.
    func serveMetrics(_ request: HTTPRequest) async -> HTTPResponse {
        if let refusal = refuseUnlessAuthorized(request, token: configuration.metricsToken, what: "metrics", tokenName: "metrics token",
                                                forbidden: ErrorCode.metricsNeedToken.error("this server shows /metrics only to loopback clients until a metrics token is configured (--metrics-token)"))
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
        let http = httpStatistics ?? HTTPServerStatistics()
        metric("livelist_connections_open", "gauge", "Open connections.", [("", http.connectionsOpen)])
        metric("livelist_connections_accepted_total", "counter", "Connections accepted.", [("", http.connectionsAccepted)])
        metric("livelist_connections_refused_total", "counter", "Connections refused at the connection limit.", [("", http.connectionsRefused)])
        metric("livelist_requests_total", "counter", "Requests parsed.", [("", http.requests)])
        metric("livelist_protocol_errors_total", "counter", "Requests refused by the HTTP parser.", [("", http.protocolErrors)])
        metric("livelist_streams_overflowed_total", "counter", "Streams closed for exceeding their write backlog.", [("", http.streamsOverflowed)])
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
        metric("livelist_stream_queued_bytes", "gauge", "Bytes queued for event streams (bytes that streams share counted once).", [("", serverBox.get()?.streamBytesQueued ?? 0)])
        metric("livelist_request_body_bytes", "gauge", "Bytes of request bodies held.", [("", serverBox.get()?.bodyBytesHeld ?? 0)])
        metric("livelist_actions_paced_total", "counter", "Actions refused for their pace (429).", [("", metrics.pacedActions)])
        metric("livelist_untrusted_forwarded_total", "counter", "Requests that carried X-Forwarded-For or Forwarded from a peer that is not a trusted proxy.",
               [("", trustedProxies.untrustedForwarded)])
        let keys = actionKeys.held
        metric("livelist_client_records", "gauge", "Records kept per client, by kind, each bounded: idempotency keys of actions (and the places of their order), pace buckets, verified session cookies, cached pages, ended sign-ins, wrong sign-in attempts, visibility reports.",
               [("{kind=\"action_keys\"}", keys.keys), ("{kind=\"action_key_places\"}", keys.places), ("{kind=\"pace_buckets\"}", actionPacer?.count ?? 0),
                ("{kind=\"verified_sessions\"}", pageCache.viewers.count), ("{kind=\"cached_pages\"}", pageCache.count),
                ("{kind=\"ended_sign_ins\"}", signIns.ended.count), ("{kind=\"sign_in_failure_buckets\"}", signIns.failureBuckets),
                ("{kind=\"visibility_buckets\"}", visibilityPacer?.count ?? 0)])
        let access = metrics.access
        metric("livelist_access_refusals_total", "counter", "Requests refused by a list's access rule or the read token, by kind (paced: actions refused for their pace).",
               [("{kind=\"unauthenticated\"}", access.unauthenticated), ("{kind=\"denied\"}", access.denied), ("{kind=\"paced\"}", metrics.pacedActions)])
        metric("livelist_revocations_total", "counter", "Revocations the app asked for (identity, list, session).", [("", access.revocations)])
        metric("livelist_streams_denied_total", "counter", "Lists of open streams ended by a revocation or a re-check.", [("", access.streamsDenied)])
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

    /// The store: what it is, whether it answers.
    private func storeMetrics(_ lines: inout [String]) {
        func metric(_ name: String, _ type: String, _ help: String, _ values: [(String, Int)]) {
            lines += Self.metricLines(name, type, help, values)
        }
        let health = registry.storeHealth
        let kind = registry.isStoreShared ? "shared" : "embedded"
        metric("livelist_build_info", "gauge", "The running release: its version, the wire protocol and its store.",
               [("{version=\"\(LiveListApp.version)\",protocol=\"1\",store=\"\(kind)\"}", 1)])
        metric("livelist_store_up", "gauge", "Whether the store answers now (0 while a database is unreachable).", [("", health.isReachable ? 1 : 0)])
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
        lines.append("process_start_time_seconds \(Self.prometheusNumber(LiveListApp.processStart))")
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

    /// The release: what `/metrics` says in `livelist_build_info`.
    public static let version = "0.4.0"

    private static func processUptimeAtStart() -> Double {
        // The process's start in seconds after boot (/proc/self/stat, field 22, in clock ticks).
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Double(fields[19]) else { return 0 }
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
