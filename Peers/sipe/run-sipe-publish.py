#!/usr/bin/env python3
"""The enterprise -> OMA direction of the SIPE harness by hand (flow 4, docs/flows.md), everything
on 127.0.0.1 and stopped at the end:

    SIPE in bitlbee (sipe_driver.py, dave@contoso.com)
      -- TCP --> OCS front (kamailio-ocs-front.cfg, run-front.sh with FRONT_SERVER)
      -- TCP --> stand-in presence server (presence-server-standin.swift: PresenceServer, container 2)
                 <-- category SUBSCRIBE for dave@contoso.com, through the front (record-routed) --
    presence-gateway (linked identity sip:dave@oma.example <- sip:dave@contoso.com, publish-to-oma)
      -- UDP PUBLISH (PIDF) --> Kamailio (OMA presence server, Peers/kamailio/run-kamailio.sh)
      <-- one-shot SUBSCRIBE (Expires 0) for sip:dave@oma.example from this script, a watcher

SIPE is set to each state in turn (bitlbee commands through sipe_driver.py --control); SIPE
publishes it with SERVICE ([MS-PRES] §3.2.5.1.2) through the front to the stand-in server, which
notifies the gateway's subscription; the gateway PUBLISHes PIDF to Kamailio. After each, this
script asks Kamailio for dave@oma.example's state (RFC 6665 §4.4.3 fetch: a SUBSCRIBE with
Expires 0 and the NOTIFY it brings) and prints basic, RPID activities and note, against what
Mappings/availability-pidf.tsv (the §3.7.5.4 table) gives.

The stand-in server is the package's presence-server-standin executable (swift build builds it).

    python3 Peers/sipe/run-sipe-publish.py [--gateway .build/debug/presence-gateway]
        [--standin .build/debug/presence-server-standin] [--rpid-extensions] [--container 2|200]
        [--keep DIR]
"""
import argparse
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from harness import driver_lines, free_port, gateway_yaml, start_driver, stop, wait_listening  # beside this script

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.dirname(HERE)
REPO = os.path.dirname(PEERS)

# (label, control command, availability SIPE publishes, expected basic, activities, extra with
# rpid-extensions, note). The PIDF is the §3.7.5.4 row (Mappings/availability-pidf.tsv); with
# oma.rpid-extensions, availability-pidf-detail.tsv adds its class's signals. In an order where
# each step changes what the watcher gets (busy and away alternate), so none passes on the one
# before. SIPE publishes its states in containers 2 and 3 (userState and machineState).
STATE_STEPS = [
    ("Busy (6500)", "/AWAY :Busy", 6500, "open", ["busy"], [], None),
    ("Be right back (12500)", "/AWAY :Be right back", 12500, "open", ["away"], ["other:be-right-back"], None),
    ("Do not disturb (9500)", "/AWAY :Do not disturb", 9500, "open", ["busy"], ["other:do-not-disturb"], None),
    ("Away (15500)", "/AWAY :Away", 15500, "open", ["away"], [], None),
    ("Available (3500)", "/AWAY", 3500, "open", [], [], None),
]
# SIPE publishes a status message as note categories in containers 200, 300 and 400 only: seen
# with the server showing container 200, where no state is (so basic and activities are not
# checked: None).
NOTE_STEPS = [
    ("note", 'account sipe set status "Back at three"', None, None, None, [], "Back at three"),
    ("another note", 'account sipe set status "Gone fishing"', None, None, None, [], "Gone fishing"),
]


def fetch(kamailio_port, resource="sip:dave@oma.example", seconds=5):
    """A one-shot SUBSCRIBE (Expires 0, RFC 6665 §4.4.3) to Kamailio over UDP; returns the body of
    the NOTIFY it sends (answered 200), or None."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    local = s.getsockname()[1]
    call_id = "%x@sipe-publish-watcher" % random.getrandbits(48)
    tag = "%x" % random.getrandbits(32)
    request = "\r\n".join([
        f"SUBSCRIBE {resource} SIP/2.0",
        f"Via: SIP/2.0/UDP 127.0.0.1:{local};branch=z9hG4bK{random.getrandbits(48):x};rport",
        "Max-Forwards: 70",
        f"From: <sip:watcher@oma.example>;tag={tag}",
        f"To: <{resource}>",
        f"Call-ID: {call_id}",
        "CSeq: 1 SUBSCRIBE",
        f"Contact: <sip:watcher@127.0.0.1:{local}>",
        "Event: presence",
        "Accept: application/pidf+xml",
        "Expires: 0",
        "Content-Length: 0",
        "", ""]).encode()
    s.settimeout(0.5)
    deadline = time.time() + seconds
    sent = 0.0
    try:
        while time.time() < deadline:
            if sent == 0.0:
                s.sendto(request, ("127.0.0.1", kamailio_port))
                sent = time.time()
            try:
                data, peer = s.recvfrom(65536)
            except socket.timeout:
                continue
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode("utf-8", "replace").split("\r\n")
            if not lines[0].startswith("NOTIFY "):
                continue
            headers = [l for l in lines[1:] if l.split(":", 1)[0].strip().lower()
                       in ("via", "from", "to", "call-id", "cseq")]
            answer = "\r\n".join(["SIP/2.0 200 OK"] + headers + ["Content-Length: 0", "", ""]).encode()
            s.sendto(answer, peer)
            return body.decode("utf-8", "replace")
    finally:
        s.close()
    return None


def summary(pidf):
    """(basic, [activities], note) of a PIDF document, by pattern (the watcher's view)."""
    if pidf is None:
        return ("(no NOTIFY)", [], None)
    basic = re.search(r"<(?:\w+:)?basic>\s*(\w+)\s*</", pidf)
    activities = []
    block = re.search(r"<(?:\w+:)?activities[^>]*>(.*?)</(?:\w+:)?activities>", pidf, re.S)
    if block:
        for m in re.finditer(r"<(?:\w+:)?(\w[\w-]*)\s*(?:/>|>([^<]*)</(?:\w+:)?\1>)", block.group(1)):
            activities.append(f"other:{m.group(2)}" if m.group(1) == "other" else m.group(1))
    note = re.search(r"<(?:\w+:)?note[^>]*>([^<]*)</", pidf)
    return (basic.group(1) if basic else "(none)", activities, note.group(1) if note else None)


def matches(got, want):
    """Whether the watcher's (basic, activities, note) is the expected one (None: not checked)."""
    return got is not None and all(w is None or g == w for g, w in zip(got, want[:2])) and got[2] == want[2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gateway", default=os.path.join(REPO, ".build/debug/presence-gateway"))
    p.add_argument("--standin", default=os.path.join(REPO, ".build/debug/presence-server-standin"),
                   help="the stand-in presence server (swift build builds it)")
    p.add_argument("--rpid-extensions", action="store_true", help="oma.rpid-extensions: true")
    p.add_argument("--keep", help="work directory to keep (default: a temporary one, removed)")
    p.add_argument("--step-wait", type=float, default=15, help="seconds a step may take to reach Kamailio")
    p.add_argument("--container", type=int, default=2,
                   help="the container the stand-in server shows: 2 (states, default) or 200 (the note)")
    a = p.parse_args()

    work = a.keep or tempfile.mkdtemp(prefix="sipe-publish-")
    os.makedirs(work, exist_ok=True)
    standin = a.standin
    if not os.access(standin, os.X_OK):
        raise SystemExit(f"{standin} not found: swift build --product presence-server-standin")
    kam_port, oma_port, ent_port, front_port, server_port = (free_port() for _ in range(5))
    kam_env = dict(os.environ, KAM_RUNDIR=os.path.join(work, "kamailio"), KAM_PORT=str(kam_port),
                   KAM_GATEWAY=f"sip:127.0.0.1:{oma_port}")
    front_env = dict(os.environ, FRONT_RUNDIR=os.path.join(work, "front"), FRONT_PORT=str(front_port),
                     FRONT_GATEWAY=f"sip:127.0.0.1:{ent_port};transport=tcp",
                     FRONT_SERVER=f"sip:127.0.0.1:{server_port};transport=tcp")
    config = os.path.join(work, "gateway.yaml")
    with open(config, "w") as f:
        f.write(gateway_yaml(oma_port, ent_port, kam_port, front_port, a.rpid_extensions, linked_dave=True))
    gw_log = open(os.path.join(work, "gateway.log"), "w")
    server_log = open(os.path.join(work, "standin.log"), "w")
    gateway = driver = server = None
    steps = NOTE_STEPS if a.container != 2 else STATE_STEPS
    rows = []
    try:
        # The server and the front first: the gateway subscribes for the linked identity at start.
        server = subprocess.Popen([standin, str(server_port), str(a.container)], stdout=server_log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
        if not wait_listening(server_port):
            raise SystemExit("the stand-in server did not listen; see " + server_log.name)
        subprocess.run(["bash", os.path.join(PEERS, "kamailio/run-kamailio.sh"), "start", "-A", "WITH_BODYLOG"],
                       env=kam_env, check=True)
        subprocess.run(["bash", os.path.join(HERE, "run-front.sh"), "start"], env=front_env, check=True)
        gateway = subprocess.Popen([a.gateway, "--config", config], stdout=gw_log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
        if not wait_listening(ent_port):
            raise SystemExit("the gateway did not listen on its enterprise port; see " + gw_log.name)

        control = os.path.join(work, "control")
        driver = start_driver(HERE, work, front_port, 90 + a.step_wait * len(steps), control)
        output = []

        def read_lines():
            output.extend(driver_lines(driver))

        deadline = time.time() + 60
        while time.time() < deadline and "LOGGED-IN" not in output:
            read_lines()
            time.sleep(0.2)
        if "LOGGED-IN" not in output:
            raise SystemExit("SIPE did not log in")
        time.sleep(3)
        print("  after login:", summary(fetch(kam_port)))
        for label, command, availability, basic, activities, extensions, note in steps:
            with open(control, "a") as f:
                f.write(command + "\n")
            want = (basic, None if activities is None else activities + (extensions if a.rpid_extensions else []), note)
            deadline = time.time() + a.step_wait
            got = None
            while time.time() < deadline:
                time.sleep(1)
                read_lines()
                got = summary(fetch(kam_port))
                if matches(got, want):
                    break
            rows.append((label, availability, got, want))
    finally:
        stop(driver)
        subprocess.run(["bash", os.path.join(HERE, "run-front.sh"), "stop"], env=front_env)
        stop(gateway)
        stop(server)
        subprocess.run(["bash", os.path.join(PEERS, "kamailio/run-kamailio.sh"), "stop"], env=kam_env)

    print(f"\nWhat an OMA watcher got from Kamailio for sip:dave@oma.example"
          f" (rpid-extensions {'on' if a.rpid_extensions else 'off'}):")
    failed = 0
    for label, availability, got, want in rows:
        ok = matches(got, want)
        failed += not ok
        print(f"  {'ok  ' if ok else 'FAIL'} {label:24} basic={got[0]} activities={got[1]} note={got[2]!r}"
              + ("" if ok else f"   expected basic={want[0]} activities={want[1]} note={want[2]!r}"))
    front_log = os.path.join(work, "front", "front.log")
    if os.path.exists(front_log):
        text = open(front_log, errors="replace").read()
        services = re.findall(r"FRONTLOG in SERVICE.*?FRONTLOG-END", text, re.S)
        publishes = [x for x in services if "msrtc-category-publish+xml" in x]
        print(f"\nSIPE's SERVICE requests at the front: {len(services)}, {len(publishes)} of them category"
              f" publishes relayed to the server (log {front_log})")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("work directory kept:", work)
    return 1 if failed or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
