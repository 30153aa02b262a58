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
