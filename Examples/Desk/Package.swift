// swift-tools-version:6.1
// A help desk built around live lists (docs/GUIDE.md, "Pages of your own"): `swift run desk` here, then
// open http://127.0.0.1:8080/login and sign in as alice (a customer) or carol (an agent).
import PackageDescription

// This repository, two folders up. SwiftPM names a path dependency after its folder, whatever that is in
// a checkout; an app of yours writes `.package(url: "…/LiveList.git", from: "…")` and `package: "LiveList"`.
let liveList = String(Context.packageDirectory.split(separator: "/").dropLast(2).last ?? "LiveList")

let package = Package(
    name: "DeskExample",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "../..")],
    targets: [
        // The app: its lists, pages and routes, given a LiveListApp (so that its tests start it in process).
        .target(name: "DeskApp", dependencies: [.product(name: "LiveListServer", package: liveList)], resources: [.copy("Public")]),
        .executableTarget(name: "desk", dependencies: [
            "DeskApp",
            // Several nodes on one PostgreSQL (LIVELIST_DATABASE_URL): the only product that brings SwiftNIO.
            .product(name: "LiveListPostgres", package: liveList),
        ]),
        .testTarget(name: "DeskTests", dependencies: ["DeskApp", .product(name: "LiveListTesting", package: liveList)]),
    ],
    swiftLanguageModes: [.v6]
)
