// The Swift hot paths beside ListDiff as a package-benchmark suite, in four groups whose names start
// each benchmark's name (filter on them with --filter):
//
//   JSONPatch      JSONListState.applying(_:), JSONListDocument.apply(_:limits:) and the store's
//                  StoredLists.JSONList.applying(_:what:) (JSONPatchBenchmarks.swift)
//   PatchUpdater   PatchUpdater.performUpdates(adapter:from:to:): diff, render, operations
//                  (PatchUpdaterBenchmarks.swift)
//   ChangeLog      ChangeLog.append(_:bytes:) and a viewer's catch-up, lookup(since:current:) then
//                  compactedJoin(first:rest:to:animatableChangeCount:) (ChangeLogBenchmarks.swift)
//   RequestParser  RequestParser.append(contentsOf:) and next() on a GET, a pipelined batch and a chunked
//                  PUT (RequestParserBenchmarks.swift)
//
//     swift package --package-path Benchmarks benchmark --target HotPathBenchmarks
//     swift package --package-path Benchmarks benchmark --filter 'ChangeLog.*'
//
// Sizes come in pairs, N and 8N, so that a baseline shows how each path scales. Every benchmark builds
// its inputs in its setup (several variants, checked there), measures only the call, and hands each
// result to blackHole. The limits below keep the whole group to about two minutes on two cores.

import Benchmark

let benchmarks: @Sendable () -> Void = {
    jsonPatchBenchmarks()
    patchUpdaterBenchmarks()
    changeLogBenchmarks()
    requestParserBenchmarks()
}

/// The configuration of every benchmark here: wall clock and malloc count, at most `iterations` runs
/// and about two seconds (after two warm-up runs), so that the slowest give ten samples or so. A
/// comparison with a baseline (`benchmark baseline check`) flags a median wall clock 25% worse (this is
/// a shared, loaded two-core machine: smaller swings are noise) and a median malloc count 5% higher
/// (deterministic, so a real change).
func hotPathConfiguration(iterations: Int) -> Benchmark.Configuration {
    .init(
        metrics: [.wallClock, .mallocCountTotal],
        warmupIterations: 2,
        maxDuration: .seconds(2),
        maxIterations: iterations,
        thresholds: [
            .wallClock: BenchmarkThresholds(relative: [.p50: 25.0], absolute: [:]),
            .mallocCountTotal: BenchmarkThresholds(relative: [.p50: 5.0], absolute: [:]),
        ]
    )
}

/// A setup whose inputs are not what the benchmark expects: the benchmark fails instead of measuring
/// something else.
struct FixtureError: Error, CustomStringConvertible {
    var description: String
}

/// Throws ``FixtureError`` with `message` unless `condition` holds.
func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws(FixtureError) {
    if !condition {
        throw FixtureError(description: message())
    }
}

/// A tiny deterministic generator (SplitMix64) for the inputs: the same inputs in every run.
struct InputRandom {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n` (`n` > 0).
    mutating func below(_ n: Int) -> Int {
        Int(next() % UInt64(n))
    }
}

/// `count` written short for a benchmark's name: 10000 is `10k`.
func sizeName(_ count: Int) -> String {
    count % 1000 == 0 ? "\(count / 1000)k" : "\(count)"
}
