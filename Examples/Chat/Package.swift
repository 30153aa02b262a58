// swift-tools-version:6.1
// A chat (stick-to-bottom) served by an app that depends on LiveList (docs/GUIDE.md): `swift run` here, then open
// http://127.0.0.1:8080/lists/chat in two windows.
import PackageDescription

// This repository, two folders up. SwiftPM names a path dependency after its folder, whatever that is in
// a checkout; an app of yours writes `.package(url: "…/LiveList.git", from: "…")` and `package: "LiveList"`.
let liveList = String(Context.packageDirectory.split(separator: "/").dropLast(2).last ?? "LiveList")

let package = Package(
    name: "ChatExample",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "../..")],
    targets: [.executableTarget(name: "chat", dependencies: [.product(name: "LiveListServer", package: liveList)])],
    swiftLanguageModes: [.v6]
)
