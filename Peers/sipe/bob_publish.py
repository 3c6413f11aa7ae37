#!/usr/bin/env python3
"""Publishes a PIDF + RPID document (RFC 3863, RFC 4480, RFC 4479 person) for an OMA presentity at
the OMA presence server (Kamailio) over UDP: one RFC 3903 PUBLISH, a new publication or, with
--etag, a modification of an earlier one (SIP-If-Match, §4.4), so one publication carries the
presentity's state and Kamailio never composes several. Prints the new entity tag (SIP-ETag).

    bob_publish.py --server 127.0.0.1:5070 [--user bob] [--etag ETAG] \\
        --basic open|closed [--activity busy|on-the-phone|meeting|away|other:do-not-disturb|...] \\
        [--note TEXT] [--expires 3600]
"""
import argparse
import random
import socket
import sys
import time
from xml.sax.saxutils import escape


def pidf(user, basic, activity, note):
    person = ""
    if activity or note:
        inner = ""
        if activity:
            if activity.startswith("other:"):
                inner += f"<rpid:activities><rpid:other>{escape(activity[6:])}</rpid:other></rpid:activities>"
            else:
                inner += f"<rpid:activities><rpid:{activity}/></rpid:activities>"
        if note:
            inner += f"<dm:note>{escape(note)}</dm:note>"
        person = f'<dm:person id="p-{user}">{inner}</dm:person>'
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" '
            f'xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="sip:{user}@oma.example">'
            f'<tuple id="t-{user}"><status><basic>{basic}</basic></status>'
            f'<contact priority="0.8">sip:{user}@oma.example</contact></tuple>{person}</presence>')


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--user", default="bob")
    p.add_argument("--etag")
    p.add_argument("--basic", default="open")
    p.add_argument("--activity")
    p.add_argument("--note")
    p.add_argument("--expires", type=int, default=3600)
    a = p.parse_args()
    host, _, port = a.server.rpartition(":")
    body = pidf(a.user, a.basic, a.activity, a.note).encode()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    local = s.getsockname()[1]
    branch = "z9hG4bK" + "%x" % random.getrandbits(48)
    call_id = "%x@bob-publish" % random.getrandbits(48)
    headers = [
        f"PUBLISH sip:{a.user}@oma.example SIP/2.0",
        f"Via: SIP/2.0/UDP 127.0.0.1:{local};branch={branch};rport",
        "Max-Forwards: 70",
        f"From: <sip:{a.user}@oma.example>;tag={random.getrandbits(32):x}",
        f"To: <sip:{a.user}@oma.example>",
        f"Call-ID: {call_id}",
        "CSeq: 1 PUBLISH",
        "Event: presence",
        f"Expires: {a.expires}",
    ]
    if a.etag:
        headers.append(f"SIP-If-Match: {a.etag}")
    headers += ["Content-Type: application/pidf+xml", f"Content-Length: {len(body)}"]
    message = ("\r\n".join(headers) + "\r\n\r\n").encode() + body
    s.settimeout(0.5)
    deadline = time.time() + 8
    while time.time() < deadline:
        s.sendto(message, (host, int(port)))
        try:
            while True:
                data, _ = s.recvfrom(65536)
                text = data.decode("utf-8", "replace")
                status = int(text.split(" ", 2)[1])
                if status < 200:
                    continue
                if status != 200:
                    sys.exit(f"PUBLISH answered {text.splitlines()[0]}")
                for line in text.split("\r\n"):
                    if line.lower().startswith("sip-etag:"):
                        print(line.split(":", 1)[1].strip())
                        return 0
                sys.exit("200 without SIP-ETag")
        except socket.timeout:
            continue
    sys.exit("no answer to PUBLISH")


if __name__ == "__main__":
    sys.exit(main())
