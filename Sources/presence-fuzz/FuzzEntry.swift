import Foundation
// Fuzz entry point over the targets of FuzzTargets (README, "Fuzzing and soak").
//
// libFuzzer build:
//   PRESENCE_FUZZ=1 swift build --product presence-fuzz --scratch-path .build-fuzz
// which defines FUZZING: `main` hands over to libFuzzer's driver with the usual libFuzzer
// arguments, and PRESENCE_FUZZ_TARGET names the target (`sip`, `gateway`, ...; `all`, the
// default, runs every target on each input). A property that fails is a crash (fatalError), so
// libFuzzer writes the input out. Without FUZZING this is a corpus runner:
// `presence-fuzz [--target NAME] FILE...` runs each file once and exits 1 on a failure.
import FuzzTargets

/// The target chosen by PRESENCE_FUZZ_TARGET or `--target` (nil: all of them).
nonisolated(unsafe) var chosenTarget: FuzzTarget?

func runOne(_ bytes: [UInt8]) -> String? {
    if let chosenTarget { return chosenTarget.check(bytes) }
    return FuzzTarget.checkAll(bytes)
}

func choose(_ name: String) {
    guard name != "all" else { return }
    guard let target = FuzzTarget(named: name) else {
        FileHandle.standardError.write(
            Data(
                "unknown fuzz target \(name); one of: all \(FuzzTarget.allCases.map(\.rawValue).joined(separator: " "))\n"
                    .utf8))
        exit(2)
    }
    chosenTarget = target
}

#if FUZZING
    /// The function libFuzzer calls with each input (its runtime requires the symbol).
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        if let failure = runOne(bytes) { fatalError(failure) }
        return 0
    }

    typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

    /// libFuzzer's entry for programs that keep their own `main` (LLVM libFuzzer docs, "Using LLVMFuzzerRunDriver").
    // swift-format-ignore: AlwaysUseLowerCamelCase
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
        choose(ProcessInfo.processInfo.environment["PRESENCE_FUZZ_TARGET"] ?? "all")
        #if FUZZING
            var argc = CommandLine.argc
            var argv = CommandLine.unsafeArgv
            exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput))
        #else
            var paths = Array(CommandLine.arguments.dropFirst())
            if paths.first == "--target", paths.count >= 2 {
                choose(paths[1])
                paths.removeFirst(2)
            }
            var failed = 0
            for path in paths {
                guard let data = FileManager.default.contents(atPath: path) else {
                    FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
                    exit(1)
                }
                if let failure = runOne([UInt8](data)) {
                    failed += 1
                    print("\(path): \(failure)")
                }
            }
            print("ran \(paths.count) inputs, \(failed) failed")
            exit(failed == 0 ? 0 : 1)
        #endif
    }
}
