// swift-tools-version:6.1
import PackageDescription

/// Settings shared by every target: Swift 6 language mode (strict concurrency) and
/// `any` spelled out for existentials, so that dynamic dispatch is always visible.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "LiveList",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ListDiff", targets: ["ListDiff"]),
        .library(name: "LiveList", targets: ["LiveList"]),
        .library(name: "Markup", targets: ["Markup"]),
        .library(name: "LiveListHTML", targets: ["LiveListHTML"]),
        .library(name: "LiveListHTTP", targets: ["LiveListHTTP"]),
        .library(name: "LiveListEngine", targets: ["LiveListEngine"]),
        .library(name: "LiveListServer", targets: ["LiveListServer"]),
        // Several nodes on one PostgreSQL: a store of its own, the only product that brings SwiftNIO
        // (through postgres-nio); an app that depends on LiveListServer alone does not build it.
        .library(name: "LiveListPostgres", targets: ["LiveListPostgres"]),
        .executable(name: "livelist", targets: ["livelist"]),
        // For this package's tests and its benchmarks package only (a seeded generator, a browser model).
        .library(name: "LiveListTestSupport", targets: ["LiveListTestSupport"]),
        .library(name: "LiveListTesting", targets: ["LiveListTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // ByteBuffer, in the PostgreSQL store's rows (what postgres-nio itself depends on).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // TLS to the database (postgres-nio's own TLS is NIOSSL's configuration).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // `swift package generate-documentation`: the DocC catalogues, built by Scripts/test.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The staged differ: generic, depends on nothing.
        .target(name: "ListDiff", swiftSettings: strict),
        // The HTML writer (bytes, escaping) and its result-builder DSL, and the JSON writer; depends on nothing.
        .target(name: "Markup", swiftSettings: strict),
        // Components, nodes, builders, Renderer, Adapter and Updater protocols.
        .target(name: "LiveList", dependencies: ["ListDiff", "Markup"], swiftSettings: strict),
        // HTMLAdapter, PatchUpdater, ReloadDataUpdater, changeset and snapshot JSON, JSON-driven lists.
        .target(name: "LiveListHTML", dependencies: ["LiveList", "Markup"], swiftSettings: strict),
        // The live engine, knowing no HTTP: hosted lists (one ordered write path each), versions, change
        // logs, fan-out to event sinks, and the ListStore seam with the embedded file store.
        .target(name: "LiveListEngine", dependencies: ["LiveListHTML", "Markup"], swiftSettings: strict),
        // The routes: HTTP requests to the engine, domain errors to statuses (in one place), pages and
        // templates, sessions and sign-in (the one use of OpenSSL's HMAC), the app that serves it all.
        .target(
            name: "LiveListServer",
            dependencies: [
                "LiveListEngine", "LiveListHTML", "LiveListHTTP", "Markup", "COpenSSL",
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            swiftSettings: strict,
            // Public/ and Templates/ compiled in at build time (Plugins/EmbedResources).
            plugins: ["EmbedResources"]
        ),
        .plugin(name: "EmbedResources", capability: .buildTool(), dependencies: ["EmbedResourcesTool"]),
        .executableTarget(name: "EmbedResourcesTool", swiftSettings: strict),
        // The ListStore of several nodes on one PostgreSQL: versions assigned in transactions, recent
        // versions kept for the other nodes, LISTEN/NOTIFY, row locks (docs/DEPLOYMENT.md).
        .target(
            name: "LiveListPostgres",
            dependencies: [
                "LiveListEngine",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // OpenSSL (libssl-dev): HMAC for sessions (LiveListServer), TLS for the server (LiveListHTTP) and
        // for its health probe (livelist).
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // System calls the Glibc module does not export (epoll, eventfd, accept4 on Linux, with portable
        // fallbacks elsewhere; sendmsg);
        // not named CSystem, which apple/swift-system (brought by package-benchmark and SwiftNIO) takes.
        .target(name: "CHTTPSystem"),
        // Hand-written HTTP/1.1 server: event loops, parser, responses, SSE, router, static files.
        .target(name: "LiveListHTTP", dependencies: ["Markup", "CHTTPSystem", "CZlib", "COpenSSL"], swiftSettings: strict),
        // zlib (zlib1g-dev): gzip for pages, JSON and static files.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        // The executable: flags with environment fallbacks, logging, the demo lists.
        .executableTarget(
            name: "livelist",
            dependencies: [
                "LiveListServer",
                "LiveListPostgres",
                "LiveListHTML",
                // TLS for `livelist healthcheck` against a node that serves HTTPS itself.
                "COpenSSL",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // libFuzzer harness of the request parser (Scripts/fuzz-parser.sh builds it with the fuzzer).
        .executableTarget(name: "FuzzRequestParser", dependencies: ["LibFuzzerDriver", "LiveListHTTP"], swiftSettings: strict),
        // libFuzzer harness of the header helpers (Scripts/fuzz-headers.sh builds it with the fuzzer).
        .executableTarget(name: "FuzzHeaders", dependencies: ["LibFuzzerDriver", "LiveListServer", "LiveListHTTP", "LiveListEngine"], swiftSettings: strict),
        // The harnesses' shared main: libFuzzer's driver in a fuzzing build, a hint otherwise.
        .target(name: "LibFuzzerDriver", swiftSettings: strict),

        // What the test targets share: a model of the browser's list, a strict changeset reader, seeds.
        .target(name: "LiveListTestSupport", dependencies: ["LiveList", "LiveListHTML", "LiveListEngine"], swiftSettings: strict),
        // For app authors: the app in process, browsers that sign in, open pages, act and read changesets.
        .target(name: "LiveListTesting", dependencies: ["LiveListServer", "LiveListHTTP"], swiftSettings: strict),

        .testTarget(name: "ListDiffTests", dependencies: ["ListDiff", "LiveListTestSupport"], swiftSettings: strict),
        .testTarget(name: "MarkupTests", dependencies: ["Markup"], swiftSettings: strict),
        .testTarget(name: "LiveListTests", dependencies: ["LiveList", "ListDiff"], swiftSettings: strict),
        .testTarget(name: "LiveListHTTPTests", dependencies: ["LiveListHTTP", "LiveListTestSupport"], swiftSettings: strict),
        .testTarget(name: "LiveListHTMLTests", dependencies: ["LiveListHTML", "LiveListTestSupport"], swiftSettings: strict),
        // The engine alone: lists, versions, change logs, fan-out, sessions, the stores' contract.
        .testTarget(name: "LiveListEngineTests", dependencies: ["LiveListEngine", "LiveListHTML", "LiveListTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "LiveListServerTests",
            dependencies: ["LiveListServer", "LiveListEngine", "LiveList", "LiveListHTML", "LiveListHTTP", "LiveListTestSupport", "LiveListTesting"],
            swiftSettings: strict),
        .testTarget(
            name: "LiveListPostgresTests",
            dependencies: [
                "LiveListPostgres", "LiveListEngine", "LiveListTestSupport", .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // End to end: starts the real `livelist` binary on a free loopback port.
        // The Swift blocks of docs/GUIDE.md and docs/MIGRATING-FROM-CARBON.md (Tools/python/livelist_tools/checks/doc_snippets.py),
        // compiled with the suite against the code they describe.
        .testTarget(name: "DocSnippetTests", dependencies: ["LiveListServer", "LiveList", "ListDiff", "LiveListTesting"], swiftSettings: strict),
        .testTarget(name: "EndToEndTests", dependencies: ["LiveListTestSupport", "LiveListHTML", "LiveListHTTP"], exclude: ["Fixtures"], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
