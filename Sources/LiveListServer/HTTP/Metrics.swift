import Synchronization
import LiveListEngine
import LiveListHTTP

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
        var response = HTTPResponse.text(lines.joined(separator: "\n") + "\n")
        response.headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        response.headers.set("Cache-Control", "no-store")
        return response
    }
}
