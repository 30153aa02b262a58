// swift-tools-version:6.1
import PackageDescription

/// The main package's settings: Swift 6 language mode (below) with `any` spelled out for existentials and
/// imports internal unless marked `public`.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// Benchmarks for ListDiff, kept in a package of their own so that the main package's build and
/// tests never pull in package-benchmark.
///
/// * `DiffScenarios`: generates the exact inputs of `docs/DIFF-SCENARIOS.md` and checks their fingerprints.
/// * `diff-report`: a release executable that diffs every scenario with ListDiff and with the standard
///   library's `difference(from:)` and prints a Markdown table
///   (`swift run -c release --package-path Benchmarks diff-report`).
/// * `DiffBenchmarks`: the same measurements as a package-benchmark suite
///   (`swift package --package-path Benchmarks benchmark`).
/// * `HotPathBenchmarks`: package-benchmark suites of the other hot paths, JSON patch apply,
///   PatchUpdater, the change log and the request parser, at N and 8N, with baselines committed in
///   `.benchmarkBaselines/` (README.md).
let package = Package(
    name: "LiveListBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named explicitly: a path dependency is otherwise known by its folder's name, which depends on
        // where the repository was cloned.
        .package(name: "LiveList", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(
            name: "DiffScenarios",
            dependencies: [
                .product(name: "ListDiff", package: "LiveList"),
                .product(name: "LiveListTestSupport", package: "LiveList"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "diff-report",
            dependencies: [
                "DiffScenarios",
                .product(name: "ListDiff", package: "LiveList"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "render-report",
            dependencies: [
                .product(name: "LiveListHTML", package: "LiveList"),
                .product(name: "LiveListHTTP", package: "LiveList"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "DiffBenchmarks",
            dependencies: [
                "DiffScenarios",
                .product(name: "ListDiff", package: "LiveList"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/DiffBenchmarks",
            swiftSettings: strict,
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
        .executableTarget(
            name: "HotPathBenchmarks",
            dependencies: [
                .product(name: "LiveListHTML", package: "LiveList"),
                .product(name: "LiveListEngine", package: "LiveList"),
                .product(name: "LiveListHTTP", package: "LiveList"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/HotPathBenchmarks",
            swiftSettings: strict,
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
