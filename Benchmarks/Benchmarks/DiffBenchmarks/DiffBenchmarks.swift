// The docs/DIFF-SCENARIOS.md scenarios as a package-benchmark suite: for each scenario, ListDiff's
// `StagedChangeset` and the standard library's `target.difference(from: source)` (on the flattened cells
// for S-100x1000; not on the million-element scenarios, where it takes minutes), measuring wall-clock
// time and the number of mallocs.
//
//     swift package --package-path Benchmarks benchmark
//     swift package --package-path Benchmarks benchmark --filter 'ListDiff M-.*'
//
// Each benchmark builds its inputs once, in its setup, and checks their fingerprints; only the diff is
// measured. Limits keep the whole suite to a few minutes on two cores.

import Benchmark
import DiffScenarios
import ListDiff

/// The metrics of every benchmark here.
private let metrics: [BenchmarkMetric] = [.wallClock, .mallocCountTotal]

/// Limits for timing ListDiff on `scenario`: about a second, fewer iterations on bigger lists.
private func listDiffConfiguration(_ scenario: Scenario) -> Benchmark.Configuration {
    switch scenario.elementCount {
    case ..<10000:
        .init(metrics: metrics, warmupIterations: 3, maxDuration: .seconds(1), maxIterations: 1000)
    case ..<1_000_000:
        .init(metrics: metrics, warmupIterations: 1, maxDuration: .seconds(1), maxIterations: 50)
    default:
        .init(metrics: metrics, warmupIterations: 1, maxDuration: .seconds(2), maxIterations: 10)
    }
}

/// Limits for timing the standard library on `scenario`: a 100k-element diff takes seconds, so it runs
/// once without warm-up (more often only when it is fast, as on the unchanged list).
private func stdlibConfiguration(_ scenario: Scenario) -> Benchmark.Configuration {
    switch scenario.elementCount {
    case ..<10000:
        .init(metrics: metrics, warmupIterations: 1, maxDuration: .seconds(1), maxIterations: 100)
    default:
        .init(metrics: metrics, warmupIterations: 0, maxDuration: .seconds(1), maxIterations: 20)
    }
}

let benchmarks: @Sendable () -> Void = {
    for scenario in Scenarios.all {
        Benchmark(
            "ListDiff \(scenario.name)",
            configuration: listDiffConfiguration(scenario)
        ) { (benchmark: Benchmark, input: ScenarioInput) throws in
            for _ in benchmark.scaledIterations {
                blackHole(try input.listDiff())
            }
        } setup: {
            try scenario.makeVerifiedInput()
        }

        guard !scenario.isMillionScale else { continue }
        Benchmark(
            "stdlib \(scenario.name)",
            configuration: stdlibConfiguration(scenario)
        ) { (benchmark: Benchmark, baseline: StdlibBaseline) in
            for _ in benchmark.scaledIterations {
                blackHole(baseline.run())
            }
        } setup: {
            StdlibBaseline(try scenario.makeVerifiedInput())
        }
    }
}
