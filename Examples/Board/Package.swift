// swift-tools-version:6.1
// A team board with sign-in (docs/GUIDE.md, "Users and access"): `swift run` here, then open
// http://127.0.0.1:8080/login and sign in as alice (secret1) or bob (secret2).
import PackageDescription

// This repository, two folders up. SwiftPM names a path dependency after its folder, whatever that is in
// a checkout; an app of yours writes `.package(url: "…/LiveList.git", from: "…")` and `package: "LiveList"`.
let liveList = String(Context.packageDirectory.split(separator: "/").dropLast(2).last ?? "LiveList")

let package = Package(
    name: "BoardExample",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "../..")],
    targets: [.executableTarget(name: "board", dependencies: [
        .product(name: "LiveListServer", package: liveList),
        // Several nodes on one PostgreSQL (LIVELIST_DATABASE_URL): the only product that brings SwiftNIO.
        .product(name: "LiveListPostgres", package: liveList),
    ])],
    swiftLanguageModes: [.v6]
)
