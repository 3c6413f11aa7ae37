internal import NIOCore

extension SIPNetworkTransport {
    /// Copies a received message to ``capture`` (the bytes as they arrived, after TLS
    /// decryption); a keep-alive (CRLF, RFC 5626 §3.5.1) is no message and is not copied.
    func captureReceived(_ bytes: [UInt8], kind: SIPTransportKind, source: SIPTarget, local: SIPTarget) {
        guard let capture, let first = bytes.first, first != 13, first != 10 else { return }
        capture.capture(SIPCapturedMessage(bytes: bytes, transport: kind, source: source, destination: local))
    }

    /// Copies a datagram about to be written on `channel` (a UDP listener) to ``capture``.
    func captureSent(_ bytes: [UInt8], on channel: any Channel, to target: SIPTarget) {
        guard let capture, let local = datagramLocals[ObjectIdentifier(channel)] else { return }
        capture.capture(SIPCapturedMessage(bytes: bytes, transport: .udp, source: local, destination: target))
    }
}
