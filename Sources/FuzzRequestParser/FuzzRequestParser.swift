// libFuzzer harness for LiveListHTTP's request parser. Build and run with Scripts/fuzz-parser.sh, which
// compiles it with -sanitize=fuzzer,address -DFUZZING; a plain build links a stub so that `swift build`
// and `swift test` stay unaffected.
import LibFuzzerDriver
import LiveListHTTP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    ParserFuzzing.run(UnsafeBufferPointer(start: data, count: size))
    return 0
}

@main
struct FuzzMain {
    static func main() {
        runLibFuzzer(harness: "FuzzRequestParser", script: "Scripts/fuzz-parser.sh") { data, size in fuzz(data, size) }
    }
}
