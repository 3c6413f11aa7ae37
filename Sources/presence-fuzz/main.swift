// Fuzz entry point for the XML bridge, the document codecs and the mappers.
//
// libFuzzer build (see README, "Fuzzing"):
//   swift build -c debug --product presence-fuzz --scratch-path .build-fuzz \
//     -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING
// Without -DFUZZING this is a corpus runner: presence-fuzz FILE... runs each file once.
#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzTarget.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
#else
import Foundation

for path in CommandLine.arguments.dropFirst() {
    guard let data = FileManager.default.contents(atPath: path) else {
        FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
        exit(1)
    }
    FuzzTarget.run([UInt8](data))
}
print("ran \(CommandLine.arguments.count - 1) inputs")
#endif
