// swift-tools-version:6.1
// A todo list served by an app that depends on LiveList (docs/GUIDE.md): `swift run` here, then open
// http://127.0.0.1:8080/lists/todo in two windows.
import PackageDescription

// This repository, two folders up. SwiftPM names a path dependency after its folder, whatever that is in
// a checkout; an app of yours writes `.package(url: "…/LiveList.git", from: "…")` and `package: "LiveList"`.
let liveList = String(Context.packageDirectory.split(separator: "/").dropLast(2).last ?? "LiveList")

let package = Package(
    name: "TodoExample",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "../..")],
    targets: [.executableTarget(name: "todo", dependencies: [.product(name: "LiveListServer", package: liveList)])],
    swiftLanguageModes: [.v6]
)
