/// Limits on an SSDP datagram; an input beyond them is ignored, as any bad datagram.
public struct SSDPLimits: Sendable, Hashable {
    /// Largest datagram read (default 8 KiB; UDA 1.1 §1.1.5 limits SSDP messages to one datagram).
    public var maxBytes: Int
    /// Most header fields (default 64).
    public var maxHeaders: Int

    public init(maxBytes: Int = 8192, maxHeaders: Int = 64) {
        self.maxBytes = maxBytes
        self.maxHeaders = maxHeaders
    }
}
