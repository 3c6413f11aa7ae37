#!/usr/bin/env python3
"""The SIPE harness by hand, everything on 127.0.0.1 and stopped at the end:

    Kamailio (OMA presence server, Peers/kamailio/run-kamailio.sh)
      <- UDP -> presence-gateway (--config written here; OMA side UDP, enterprise side TCP)
      <- TCP -> OCS front (kamailio-ocs-front.cfg, run-front.sh)
      <- TCP -> SIPE in bitlbee (sipe_driver.py)

bob@oma.example publishes (bob_publish.py) the first band before SIPE logs in, then each next band
once SIPE showed the previous one (or after --step-wait seconds); dave@contoso.com (SIPE) watches
bob. Prints what SIPE showed for each band, the front's log of SIPE's SERVICE publications, and
whether SIPE's log has an XML parse error.

    python3 Peers/sipe/run-sipe.py [--gateway .build/debug/presence-gateway] [--keep DIR]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from harness import driver_lines, free_port, gateway_yaml, start_driver, stop, wait_listening  # beside this script

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.dirname(HERE)
REPO = os.path.dirname(PEERS)

# (label, basic, activity, note): the PIDF bands of Mappings/pidf-availability.tsv, plus a note.
STEPS = [
    ("online (open)", "open", None, None),
    ("busy", "open", "busy", None),
    ("on-the-phone", "open", "on-the-phone", None),
    ("meeting", "open", "meeting", None),
    ("away", "open", "away", None),
    ("do-not-disturb (other)", "open", "other:do-not-disturb", None),
    ("be-right-back (other)", "open", "other:be-right-back", None),
    ("online + note", "open", None, "Back at three"),
    ("offline (closed)", "closed", None, None),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gateway", default=os.path.join(REPO, ".build/debug/presence-gateway"))
    p.add_argument("--keep", help="work directory to keep (default: a temporary one, removed)")
    p.add_argument("--step-wait", type=float, default=10)
    p.add_argument("--publish-test", action="store_true", help="also set SIPE's own status (SERVICE publish)")
    a = p.parse_args()

    work = a.keep or tempfile.mkdtemp(prefix="sipe-run-")
    os.makedirs(work, exist_ok=True)
    kam_port, oma_port, ent_port, front_port = free_port(), free_port(), free_port(), free_port()
    kam_env = dict(os.environ, KAM_RUNDIR=os.path.join(work, "kamailio"), KAM_PORT=str(kam_port),
                   KAM_GATEWAY=f"sip:127.0.0.1:{oma_port}")
    front_env = dict(os.environ, FRONT_RUNDIR=os.path.join(work, "front"), FRONT_PORT=str(front_port),
                     FRONT_GATEWAY=f"sip:127.0.0.1:{ent_port};transport=tcp")
    config = os.path.join(work, "gateway.yaml")
    with open(config, "w") as f:
        f.write(gateway_yaml(oma_port, ent_port, kam_port, front_port))
    gw_log = open(os.path.join(work, "gateway.log"), "w")
    gateway = driver = None
    shown = []
    try:
        subprocess.run(["bash", os.path.join(PEERS, "kamailio/run-kamailio.sh"), "start", "-A", "WITH_BODYLOG"],
                       env=kam_env, check=True)
        gateway = subprocess.Popen([a.gateway, "--config", config], stdout=gw_log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
        if not wait_listening(ent_port):
            raise SystemExit("the gateway did not listen on its enterprise port; see " + gw_log.name)
        subprocess.run(["bash", os.path.join(HERE, "run-front.sh"), "start"], env=front_env, check=True)

        def publish(step, etag):
            label, basic, activity, note = step
            cmd = [sys.executable, os.path.join(HERE, "bob_publish.py"), "--server", f"127.0.0.1:{kam_port}",
                   "--basic", basic]
            if activity:
                cmd += ["--activity", activity]
            if note:
                cmd += ["--note", note]
            if etag:
                cmd += ["--etag", etag]
            return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()

        etag = publish(STEPS[0], None)
        control = os.path.join(work, "control")
        driver = start_driver(HERE, work, front_port, 60 + a.step_wait * len(STEPS), control)
        statuses = []

        def read_lines():
            statuses.extend(line.split(" ", 2)[2] for line in driver_lines(driver) if line.startswith("STATUS "))

        def wait_status(after, seconds):
            deadline = time.time() + seconds
            while time.time() < deadline:
                read_lines()
                if len(statuses) > after:
                    time.sleep(1.5)  # anything that follows at once (the offline-first flicker)
                    read_lines()
                    return statuses[after:]
                time.sleep(0.2)
            return []

        first = wait_status(0, 40)
        shown.append((STEPS[0][0], " -> ".join(first) or "(nothing)"))
        for step in STEPS[1:]:
            mark = len(statuses)
            etag = publish(step, etag)
            seen = wait_status(mark, a.step_wait)
            shown.append((step[0], " -> ".join(seen) or "(no change)"))
        if a.publish_test:
            for command in ("account sipe set status Lunch", "/AWAY :Busy", "/AWAY :Do not disturb",
                            "/AWAY :Be right back", "/AWAY :Away", "/AWAY"):
                with open(control, "a") as f:
                    f.write(command + "\n")
                time.sleep(4)
                read_lines()
    finally:
        stop(driver)
        subprocess.run(["bash", os.path.join(HERE, "run-front.sh"), "stop"], env=front_env)
        stop(gateway)
        subprocess.run(["bash", os.path.join(PEERS, "kamailio/run-kamailio.sh"), "stop"], env=kam_env)

    print("\nWhat SIPE (bitlbee blist) showed for bob@oma.example:")
    for label, seen in shown:
        print(f"  {label:26} {seen}")
    debug = os.path.join(work, "sipe", "purple-debug.log")
    text = open(debug, errors="replace").read() if os.path.exists(debug) else ""
    errors = [l for l in text.splitlines() if "error parsing xml string" in l]
    print(f"\nSIPE's log: {len(errors)} 'error parsing xml string' lines")
    for l in errors[:10]:
        print("  " + l)
    front_log = os.path.join(work, "front", "front.log")
    if os.path.exists(front_log):
        services = re.findall(r"FRONTLOG in SERVICE.*?FRONTLOG-END", open(front_log, errors="replace").read(), re.S)
        print(f"\nSIPE's SERVICE requests at the front: {len(services)} (log {front_log})")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("work directory kept:", work)


if __name__ == "__main__":
    main()
