import Foundation

// Writes the Swift file of the EmbedResources plugin: `EmbedResourcesTool OUTPUT KEY=PATH…` writes, to
// OUTPUT, an enum `EmbeddedResources` whose `base64` maps each KEY (`Public/livelist.js`) to the base64
// of the file at PATH, in lines of 76 characters: exact bytes, and fast to compile.
let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: EmbedResourcesTool OUTPUT KEY=PATH...\n".utf8))
    exit(2)
}
var text = """
    // Generated at build time by the EmbedResources plugin (Plugins/EmbedResources) from Public/ and
    // Templates/: never kept in the repository.

    /// The files of `Public/` and `Templates/`, by path from the package's root, in base64.
    enum EmbeddedResources {
        static let base64: [String: String] = [

    """
for pair in arguments.dropFirst() {
    guard let equals = pair.firstIndex(of: "=") else {
        FileHandle.standardError.write(Data("EmbedResourcesTool: \(pair) is not KEY=PATH\n".utf8))
        exit(2)
    }
    let key = String(pair[..<equals])
    let path = String(pair[pair.index(after: equals)...])
    guard let data = FileManager.default.contents(atPath: path) else {
        FileHandle.standardError.write(Data("EmbedResourcesTool: cannot read \(path)\n".utf8))
        exit(1)
    }
    let encoded = data.base64EncodedString()
    var lines: [Substring] = []
    var rest = Substring(encoded)
    while !rest.isEmpty {
        lines.append(rest.prefix(76))
        rest = rest.dropFirst(76)
    }
    text += "        \"\(key)\": \"\"\"\n"
    for line in lines {
        text += "        \(line)\n"
    }
    text += "        \"\"\",\n"
}
text += "    ]\n}\n"
do {
    // Written only when it changed, so that an unchanged input does not rebuild the target.
    if FileManager.default.contents(atPath: output) != Data(text.utf8) {
        try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
    }
} catch {
    FileHandle.standardError.write(Data("EmbedResourcesTool: cannot write \(output): \(error)\n".utf8))
    exit(1)
}

#if FUZZING
// A fuzzing build (Scripts/fuzz.sh) compiles every target with -sanitize=fuzzer, this build tool as well,
// and libFuzzer's runtime then needs the entry point it calls. The tool fuzzes nothing: it only runs as
// the plugin's generator, through its own main.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 { 0 }
#endif
