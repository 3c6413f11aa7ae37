import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The benchmarks' memory readings (event-bench, gateway-bench): resident size, live heap, and
/// trimming the allocator's free pages, so that figures can be given three ways.
public enum ProcessMemory {
    /// The malloc this process runs on: the gateway runs on jemalloc (scripts/allocator.sh, which
    /// scripts/run.sh sources), a benchmark on whatever it is started with.
    public static var allocator: String {
        dlsym(nil, "mallctl") != nil ? "jemalloc" : "the C library's malloc"
    }

    /// Gives free heap pages back to the system (glibc `malloc_trim(0)`; on jemalloc, as
    /// scripts/run.sh runs the gateway, `mallctl("arena.4096.purge")`, 4096 naming every arena;
    /// both looked up at run time), so that resident memory counts live allocations rather than
    /// freed memory the allocator keeps after the bench's temporary messages. The figures are
    /// printed with and without it.
    public static func trimHeap() {
        typealias Control =
            @convention(c) (
                UnsafePointer<CChar>, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, UnsafeMutableRawPointer?,
                Int
            ) -> Int32
        if let symbol = dlsym(nil, "mallctl") {
            _ = unsafeBitCast(symbol, to: Control.self)("arena.4096.purge", nil, nil, nil, 0)
        }
        typealias Trim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(nil, "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
    }

    /// Bytes in live heap allocations: glibc `malloc_stats()` (looked up at run time) prints
    /// "in use bytes" for all arenas and mmapped blocks to stderr, which is caught in a
    /// temporary file for the moment. Unlike resident memory it does not count pages that
    /// freed temporaries left partly used. 0 when unavailable.
    public static func heapInUse() -> Int {
        typealias Stats = @convention(c) () -> Void
        guard let symbol = dlsym(nil, "malloc_stats") else { return 0 }
        let path = NSTemporaryDirectory() + "bench-malloc-stats-\(getpid()).txt"
        let file = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0o600)
        guard file >= 0 else { return 0 }
        fflush(nil)
        let saved = dup(2)
        dup2(file, 2)
        unsafeBitCast(symbol, to: Stats.self)()
        fflush(nil)
        dup2(saved, 2)
        close(saved)
        close(file)
        defer { unlink(path) }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return 0 }
        // The last "in use bytes" line is the total (incl. mmap).
        let lines = text.split(separator: "\n").filter { $0.contains("in use bytes") }
        guard let last = lines.last, let value = last.split(separator: "=").last else { return 0 }
        return Int(value.trimmingCharacters(in: .whitespaces)) ?? 0
    }

    /// Resident memory of this process in bytes (/proc/self/statm), 0 when unreadable.
    public static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

}
