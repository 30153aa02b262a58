import Foundation
import PackagePlugin

/// Compiles the files a server serves and renders with (`Public/` without the readable `*.src.js`
/// sources, and `Templates/`, at the package's root) into the target it is applied to, at build time,
/// as `EmbeddedResources.swift` in the build's own folder: nothing generated is kept in the repository,
/// and a program that depends on LiveList serves its pages from any working directory.
@main
struct EmbedResources: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let root = context.package.directoryURL
        var inputs: [URL] = []
        var pairs: [String] = []
        for folder in ["Public", "Templates"] {
            let directory = root.appending(path: folder)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path()).sorted()
            for name in names where !name.hasPrefix(".") && !name.hasSuffix(".src.js") {
                let file = directory.appending(path: name)
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: file.path(), isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
                inputs.append(file)
                pairs.append("\(folder)/\(name)=\(file.path())")
            }
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedResources.swift")
        return [
            .buildCommand(
                displayName: "Embedding Public/ and Templates/ in \(target.name)",
                executable: try context.tool(named: "EmbedResourcesTool").url,
                arguments: [output.path()] + pairs,
                inputFiles: inputs,
                outputFiles: [output])
        ]
    }
}
