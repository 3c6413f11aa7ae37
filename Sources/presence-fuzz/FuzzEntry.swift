// Fuzz entry point for the SIP parser and stream framer, the XML bridge, the document codecs and the mappers.
//
// libFuzzer build (README, "Fuzzing"):
//   PRESENCE_FUZZ=1 swift build --product presence-fuzz --scratch-path .build-fuzz
// which defines FUZZING: `main` hands over to libFuzzer's driver with the
// usual libFuzzer arguments. Without FUZZING this is a corpus runner:
// `presence-fuzz FILE...` runs each file once (how a crash input is replayed).
import Foundation

#if FUZZING
/// The function libFuzzer calls with each input (its runtime requires the symbol).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    FuzzTarget.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

/// libFuzzer's entry for programs that keep their own `main` (LLVM libFuzzer docs, "Using LLVMFuzzerRunDriver").
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: FuzzCallback
) -> CInt
#endif

@main
enum FuzzEntry {
    static func main() {
        #if FUZZING
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput))
        #else
        for path in CommandLine.arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
                exit(1)
            }
            FuzzTarget.run([UInt8](data))
        }
        print("ran \(CommandLine.arguments.count - 1) inputs")
        #endif
    }
}
