// swift-tools-version:6.1
import PackageDescription

/// The LiveList side of `Benchmarks/run http` and `Benchmarks/run idle`: `http-bench-server` serves
/// a body from memory and static files on the main package's HTTPServer.
///
/// A package of its own, so that building the diff benchmarks never builds the HTTP servers (and the
/// reference server's SwiftNIO stays in `../HummingbirdReference`).
let package = Package(
    name: "HTTPServerBench",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named explicitly: a path dependency is otherwise known by its folder's name.
        .package(name: "LiveList", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "http-bench-server",
            dependencies: [.product(name: "LiveListHTTP", package: "LiveList")],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("InternalImportsByDefault"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
