// The `main` of every libFuzzer harness here (FuzzRequestParser, FuzzHeaders). Built by Scripts/fuzz.sh
// with -sanitize=fuzzer,address -DFUZZING, it hands the process to libFuzzer's driver; a plain build
// (`swift build`, `swift test`) has no libFuzzer, so it only says how to build the harness.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One fuzz input: the bytes and their count; the answer is libFuzzer's (0).
public typealias FuzzTest = @convention(c) (UnsafePointer<UInt8>, Int) -> CInt

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: FuzzTest
) -> CInt
#endif

/// Runs libFuzzer on `test` with the process's arguments and exits with its status; in a build without
/// the fuzzer, prints how to build `harness` (`script` builds and runs it) and exits.
public func runLibFuzzer(harness: String, script: String, _ test: FuzzTest) -> Never {
    #if FUZZING
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, test))
    #else
    print("\(harness): build it with \(script) (-sanitize=fuzzer,address -DFUZZING)")
    exit(0)
    #endif
}
