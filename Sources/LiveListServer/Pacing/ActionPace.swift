import Synchronization

/// How fast one client may send actions: a token bucket per session and one per client address.
/// Each holds up to `burst` actions and refills at `rate` per second, so a burst of any length makes
/// at most `burst + rate × duration` actions go through; past it the action is answered 429 with
/// `Retry-After` (docs/PROTOCOL.md, "Actions").
public struct ActionPace: Sendable, Equatable {
    /// Actions per second that a session (and a client address) may keep sending.
    public var rate: Double
    /// Actions a session (and a client address) may send at once before the rate applies.
    public var burst: Int

    /// A pace of `rate` actions per second after a burst of `burst`.
    public init(rate: Double, burst: Int) {
        self.rate = rate
        self.burst = burst
    }

    /// The default: 10 actions a second after a burst of 40, more than a person clicking and typing
    /// quickly sends (visibility reports do not count).
    public static let standard = ActionPace(rate: 10, burst: 40)
}

/// The buckets of an ``ActionPace``, by key (a session, a client address). Memory is bounded: keys
/// live in two generations of at most `capacity / 2` each; when the newer one fills up, the older is
/// dropped. A key dropped that way starts again with a full bucket, so an attacker gains one burst per
/// `capacity / 2` other keys, never more than the pace of the address he sends from.
final class ActionPacer: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private struct Generations {
        var current: [String: Bucket] = [:]
        var previous: [String: Bucket] = [:]
    }

    let pace: ActionPace
    private let capacity: Int
    private let buckets = Mutex(Generations())

    init(pace: ActionPace, capacity: Int = 200_000) {
        self.pace = pace
        self.capacity = max(2, capacity)
    }

    /// Takes one action from every key's bucket when each has one; otherwise takes nothing and
    /// returns the whole seconds after which all of them will (at least 1).
    func take(_ keys: [String], now: ContinuousClock.Instant = .now) -> Int? {
        take(keys, cost: 1, now: now)
    }

    /// Takes `cost` actions (at least 1, at most a burst) from every key's bucket when each has them;
    /// otherwise takes nothing and returns the whole seconds after which all of them will.
    func take(_ keys: [String], cost: Int, now: ContinuousClock.Instant = .now) -> Int? {
        let cost = Double(min(max(1, cost), max(1, pace.burst)))
        return buckets.withLock { generations in
            let (found, wait) = refilled(keys, now: now, in: generations, cost: cost)
            if let wait { return wait }
            spend(keys, found, in: &generations, cost: cost)
            return nil
        }
    }

    /// The whole seconds until every key's bucket has an action (at least 1), or nil when each has one
    /// now; takes nothing (a sign-in attempt asks first, and ``charge(_:now:)`` counts its failure).
    func wait(_ keys: [String], now: ContinuousClock.Instant = .now) -> Int? {
        buckets.withLock { generations in refilled(keys, now: now, in: generations).wait }
    }

    /// Takes one action from every key's bucket, down to an empty bucket at worst.
    func charge(_ keys: [String], now: ContinuousClock.Instant = .now) {
        buckets.withLock { generations in
            let (found, _) = refilled(keys, now: now, in: generations)
            spend(keys, found.map { Bucket(tokens: max(1, $0.tokens), updated: $0.updated) }, in: &generations)
        }
    }

    /// Each key's bucket refilled to `now`, and the wait when one of them is empty.
    private func refilled(_ keys: [String], now: ContinuousClock.Instant, in generations: Generations, cost: Double = 1) -> (found: [Bucket], wait: Int?) {
        let burst = Double(max(1, pace.burst))
        let rate = max(pace.rate, 0.000_001)
        var found: [Bucket] = []
        var wait = 0.0
        for key in keys {
            var bucket = generations.current[key] ?? generations.previous[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = bucket.updated.duration(to: now)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(burst, bucket.tokens + max(0, seconds) * rate)
            bucket.updated = now
            if bucket.tokens < cost {
                wait = max(wait, (cost - bucket.tokens) / rate)
            }
            found.append(bucket)
        }
        return (found, wait > 0 ? max(1, Int(wait.rounded(.up))) : nil)
    }

    /// Takes one action from each bucket and keeps it, within the generations' bound.
    private func spend(_ keys: [String], _ found: [Bucket], in generations: inout Generations, cost: Double = 1) {
        for (key, var bucket) in zip(keys, found) {
            bucket.tokens -= cost
            if generations.current[key] == nil {
                generations.previous.removeValue(forKey: key)
                if generations.current.count >= capacity / 2 {
                    generations.previous = generations.current
                    generations.current = [:]
                }
            }
            generations.current[key] = bucket
        }
    }

    /// The keys held, for tests.
    var count: Int {
        buckets.withLock { $0.current.count + $0.previous.count }
    }
}
