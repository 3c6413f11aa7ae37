extension SIPResponse {
    /// A response to `request` with the fields RFC 3261 §8.2.6.2 copies: every Via in order, From,
    /// To, Call-ID and CSeq, plus Timestamp (§8.2.6.1, without the delay value). When the
    /// request's To has no tag and `toTag` is given, the tag is added ("the UAS MUST add a tag to
    /// the To header field in the response", except 100 Trying). Without a `reasonPhrase` the
    /// RFC 3261 §21 phrase for the code is used.
    ///
    /// The copies keep the request's bytes (a Via is forwarded exactly as it came).
    public init(
        replyingTo request: SIPRequest, statusCode: Int, reasonPhrase: String? = nil, toTag: String? = nil,
        headers extra: SIPHeaders = [], body: [UInt8] = []
    ) {
        var headers = SIPHeaders()
        // Exactly the room needed: a server transaction keeps its response for 64·T1 over UDP.
        let copied = request.headers.fields.count { field in
            switch field.name {
            case .via, .from, .to, .callID, .cseq, "Timestamp": true
            default: false
            }
        }
        headers.fields.reserveCapacity(copied + extra.fields.count)
        for field in request.headers.fields {
            switch field.name {
            case .via, .from, .callID, .cseq, "Timestamp":
                headers.fields.append(field)
            case .to:
                var to = field
                if let toTag, statusCode != 100, (try? request.headers.to)?.tag == nil {
                    to.value = to.value + ";tag=" + toTag
                }
                headers.fields.append(to)
            default:
                break
            }
        }
        headers.fields.append(contentsOf: extra.fields)
        self.init(
            statusCode: statusCode, reasonPhrase: reasonPhrase ?? Self.standardReasonPhrase(statusCode),
            headers: headers, body: body)
    }

    /// The reason phrase RFC 3261 §21 (and RFC 3265/6665, RFC 3903, RFC 5626) gives a status code;
    /// for other codes the phrase of its class.
    public static func standardReasonPhrase(_ code: Int) -> String {
        switch code {
        case 100: "Trying"
        case 180: "Ringing"
        case 181: "Call Is Being Forwarded"
        case 182: "Queued"
        case 183: "Session Progress"
        case 200: "OK"
        case 202: "Accepted"
        case 300: "Multiple Choices"
        case 301: "Moved Permanently"
        case 302: "Moved Temporarily"
        case 305: "Use Proxy"
        case 380: "Alternative Service"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 402: "Payment Required"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 410: "Gone"
        case 412: "Conditional Request Failed"
        case 413: "Request Entity Too Large"
        case 414: "Request-URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Unsupported URI Scheme"
        case 420: "Bad Extension"
        case 421: "Extension Required"
        case 423: "Interval Too Brief"
        case 480: "Temporarily Unavailable"
        case 481: "Call/Transaction Does Not Exist"
        case 482: "Loop Detected"
        case 483: "Too Many Hops"
        case 484: "Address Incomplete"
        case 485: "Ambiguous"
        case 486: "Busy Here"
        case 487: "Request Terminated"
        case 488: "Not Acceptable Here"
        case 489: "Bad Event"
        case 491: "Request Pending"
        case 493: "Undecipherable"
        case 500: "Server Internal Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Server Time-out"
        case 505: "Version Not Supported"
        case 513: "Message Too Large"
        case 600: "Busy Everywhere"
        case 603: "Decline"
        case 604: "Does Not Exist Anywhere"
        case 606: "Not Acceptable"
        default:
            switch code / 100 {
            case 1: "Provisional"
            case 2: "Success"
            case 3: "Redirection"
            case 4: "Request Failure"
            case 5: "Server Failure"
            default: "Global Failure"
            }
        }
    }
}
