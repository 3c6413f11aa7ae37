"""What the by-hand SIPE runners (run-sipe.py, run-sipe-publish.py) share: free loopback ports,
waiting for a TCP listener, and the gateway's configuration between the OCS front (enterprise
side, TCP) and Kamailio (OMA side, UDP)."""
import os
import socket
import subprocess
import sys
import time


def free_port():
    """A port on 127.0.0.1 free on UDP and TCP a moment ago."""
    for _ in range(50):
        with socket.socket() as t:
            t.bind(("127.0.0.1", 0))
            port = t.getsockname()[1]
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                u.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
    raise SystemExit("no free port")


def wait_listening(port, seconds=20):
    """Whether something accepts TCP on 127.0.0.1:port within `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def gateway_yaml(oma_port, enterprise_port, kamailio_port, front_port, rpid_extensions=False, linked_dave=False):
    """The gateway between the front and Kamailio; with `linked_dave`, dave is a linked identity
    published to the OMA side (flow 4, enterprise -> OMA)."""
    linked = ('linked-identities:\n  - { oma: "sip:dave@oma.example", enterprise: "sip:dave@contoso.com", '
              'publish-to-enterprise: false, publish-to-oma: true }\n') if linked_dave else ""
    return f"""state: {{ store: memory }}
listen:
  - {{ side: oma, transport: udp, address: 127.0.0.1, port: {oma_port} }}
  - {{ side: enterprise, transport: tcp, address: 127.0.0.1, port: {enterprise_port} }}
enterprise:
  domains: [contoso.com]
  next-hop: "sip:127.0.0.1:{front_port};transport=tcp"
oma:
  domains: [oma.example]
  next-hop: "sip:127.0.0.1:{kamailio_port};transport=udp"
  rpid-extensions: {"true" if rpid_extensions else "false"}
peers:
  - {{ name: ocs-front, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }}
  - {{ name: kamailio, address: 127.0.0.1, port: {kamailio_port}, side: oma, network: federated }}
presentities:
  default:
    defaults: {{ sameEnterprise: allow, federated: allow, publicCloud: polite-block }}
    containers: {{ 100: [federated], 200: [sameEnterprise] }}
{linked}subscriptions:
  piggyback-wait-ms: 500
  default-expires: 600
  minimum-expires: 1
"""


def stop(process, seconds=10):
    """Ends a child started by a runner: SIGTERM, then SIGKILL after `seconds`."""
    if process and process.poll() is None:
        process.terminate()
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            process.kill()


def start_driver(here, work, front_port, seconds, control):
    """sipe_driver.py logging dave in through the front, reading commands from `control`; its
    standard output non-blocking, for ``driver_lines``."""
    open(control, "w").close()
    driver = subprocess.Popen([sys.executable, os.path.join(here, "sipe_driver.py"), "--front",
                               f"127.0.0.1:{front_port}", "--workdir", os.path.join(work, "sipe"),
                               "--seconds", str(seconds), "--control", control],
                              stdout=subprocess.PIPE, text=True, bufsize=1)
    os.set_blocking(driver.stdout.fileno(), False)
    return driver


def driver_lines(driver):
    """The driver's lines printed so far and not yet read, each echoed."""
    lines = []
    while True:
        line = driver.stdout.readline()
        if not line:
            return lines
        line = line.rstrip("\n")
        print("  driver:", line)
        lines.append(line)
