// swift-tools-version:6.1
import PackageDescription

/// The Hummingbird 2 reference server of `Benchmarks/run http`: the same two routes as
/// `http-bench-server` (a body from memory and static files). A package of its own, so that SwiftNIO is
/// built only by the script that compares against it.
let package = Package(
    name: "HummingbirdReference",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "hummingbird-bench-server",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("InternalImportsByDefault"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
