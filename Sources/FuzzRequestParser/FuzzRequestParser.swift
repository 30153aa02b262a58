// libFuzzer harness for LiveListHTTP's request parser. Build and run with Scripts/fuzz-parser.sh, which
// compiles it with -sanitize=fuzzer,address -DFUZZING; a plain build links a stub so that `swift build`
// and `swift test` stay unaffected.
import LiveListHTTP
#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    ParserFuzzing.run(UnsafeBufferPointer(start: data, count: size))
    return 0
}

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

@main
struct FuzzMain {
    static func main() {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, { data, size in fuzz(data, size) }))
    }
}
#else
@main
struct FuzzMain {
    static func main() {
        print("FuzzRequestParser: build it with Scripts/fuzz-parser.sh (-sanitize=fuzzer,address -DFUZZING)")
    }
}
#endif
