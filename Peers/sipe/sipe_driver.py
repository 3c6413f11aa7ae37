#!/usr/bin/env python3
"""SIPE (pidgin-sipe, a libpurple plugin) as a real [MS-PRES] client, headless: bitlbee
(bitlbee-libpurple) runs libpurple behind an IRC server on loopback, and this script is its IRC
client. It logs the user in through the OCS front (kamailio-ocs-front.cfg) over TCP and reports
on standard output, one line each, flushed:

    BITLBEE <port> <pid>                  bitlbee started (it leads a process group of its own)
    LOGGED-IN                             the account is online (bitlbee said "Logged in")
    STATUS <handle> <status> | <message>  a buddy's status as bitlbee shows it (blist), printed
                                          every time it changes; message empty when none
    SENT <command>                        a control command was handed to bitlbee
    ROOT <text>                           bitlbee's other root messages (errors, notices)
    EXIT <reason>                         the end

libpurple's debug output (SIPE's log: every SIP message it sends and receives, and its parse
errors such as "error parsing xml string") goes to --debug-log.

SIPE's XML parsing needs the SAX1 shim on Debian 12's libxml2 (sax1-shim.c beside this file):
it is compiled into the work directory and preloaded into bitlbee unless --no-shim.

Control: each line appended to --control (a file) is sent to bitlbee's root channel as a command
(e.g. "account sipe set status Lunch": the status message, which SIPE publishes as a note), or,
when it starts with "/", as a raw IRC line (e.g. "/AWAY :Busy", "/AWAY :Do not disturb", "/AWAY":
the user's own state, matched by bitlbee against SIPE's status names). SIPE publishes what it is
given with SERVICE requests (category publish, [MS-PRES] §3.2.5.1) to its own URI.

    sipe_driver.py --front 127.0.0.1:5090 --workdir /tmp/sipe-run --seconds 120 \\
        [--user dave@contoso.com] [--buddy bob@oma.example] [--debug-log FILE] [--control FILE]
"""
import argparse
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_shim(workdir):
    source = os.path.join(HERE, "sax1-shim.c")
    target = os.path.join(workdir, "sax1-shim.so")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise SystemExit("EXIT no C compiler (cc/gcc) to build sax1-shim.so: bash scripts/setup.sh installs gcc")
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", target, source, "-ldl"], check=True)
    return target


class IRC:
    def __init__(self, port):
        deadline = time.time() + 15
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        self.sock.setblocking(False)
        self.buffer = b""

    def send(self, line):
        self.sock.sendall((line + "\r\n").encode())

    def root(self, command):
        self.send("PRIVMSG &bitlbee :" + command)

    def lines(self, timeout):
        """The IRC lines received within `timeout` seconds (at least one wait)."""
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if ready:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("bitlbee closed the IRC connection")
            self.buffer += data
        result = []
        while b"\r\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\r\n", 1)
            result.append(line.decode("utf-8", "replace"))
        return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--front", required=True, help="host:port of the OCS front (TCP)")
    parser.add_argument("--user", default="dave@contoso.com")
    parser.add_argument("--buddy", default="bob@oma.example")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--seconds", type=float, default=120, help="run time, then quit")
    parser.add_argument("--debug-log", default=None, help="libpurple's debug output (SIPE's log)")
    parser.add_argument("--control", default=None, help="a file whose new lines are sent as root commands")
    parser.add_argument("--useragent", default="UCCAPI/4.0.7577.0 OC/4.0.7577.0 (Microsoft Lync 2010)")
    parser.add_argument("--no-shim", action="store_true", help="do not preload sax1-shim.so")
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between blist polls")
    parser.add_argument("--settle", type=float, default=3,
                        help="seconds after login before the first blist poll: the first state reported is the one "
                             "SIPE settled on after its presence SUBSCRIBE was answered, not the offline it starts with")
    args = parser.parse_args()

    for tool in ("/usr/sbin/bitlbee", "/usr/lib/purple-2/libsipe.so"):
        if not os.path.exists(tool):
            out(f"EXIT {tool} missing: bash scripts/setup.sh installs bitlbee-libpurple and pidgin-sipe")
            return 2

    workdir = args.workdir or tempfile.mkdtemp(prefix="sipe-driver-")
    os.makedirs(workdir, exist_ok=True)
    state = os.path.join(workdir, "bitlbee-state")
    os.makedirs(state, exist_ok=True)
    home = os.path.join(workdir, "home")  # libpurple's ~/.purple
    os.makedirs(home, exist_ok=True)
    conf = os.path.join(workdir, "bitlbee.conf")
    with open(conf, "w") as f:
        f.write("[settings]\nRunMode = Daemon\nAuthMode = Open\nDaemonInterface = 127.0.0.1\n"
                f"ConfigDir = {state}\nPidFile = {workdir}/bitlbee.pid\n[defaults]\n")
    port = free_port()
    env = dict(os.environ, HOME=home, BITLBEE_DEBUG="1", PURPLE_VERBOSE_DEBUG="1", PURPLE_UNSAFE_DEBUG="1")
    if not args.no_shim:
        env["LD_PRELOAD"] = build_shim(workdir)
    debug_log = args.debug_log or os.path.join(workdir, "purple-debug.log")
    log = open(debug_log, "w")
    # -D -n: one process, in the foreground; its own process group, ended as a whole.
    bitlbee = subprocess.Popen(["/usr/sbin/bitlbee", "-D", "-n", "-v", "-i", "127.0.0.1", "-p", str(port),
                                "-c", conf, "-d", state],
                               stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                               start_new_session=True)

    def stop(*_):
        if bitlbee.poll() is None:
            try:
                os.killpg(bitlbee.pid, signal.SIGTERM)
                bitlbee.wait(timeout=1)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                try:
                    os.killpg(bitlbee.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                bitlbee.wait()
        log.close()

    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit(0)))
    try:
        return run(args, port, bitlbee.pid)
    except EOFError as error:
        out(f"EXIT {error}")
        return 1
    finally:
        stop()


def run(args, port, pid):
    out(f"BITLBEE {port} {pid}")
    irc = IRC(port)
    nick = "dave"
    irc.send(f"NICK {nick}")
    irc.send(f"USER {nick} 0 * :{nick}")
    host, _, front_port = args.front.rpartition(":")
    setup = [
        f"account add sipe {args.user} secret",
        f"account sipe set server {host}:{front_port}",
        "account sipe set transport tcp",
        f"account sipe set useragent \"{args.useragent}\"",
        "account sipe on",
    ]
    joined = False
    logged_in = False
    last = None
    in_blist = False
    seen = {}
    control_offset = 0
    next_poll = 0.0
    deadline = time.time() + args.seconds
    while time.time() < deadline:
        for line in irc.lines(0.2):
            if line.startswith("PING"):
                irc.send("PONG" + line[4:])
                continue
            m = re.match(r":(\S+) (\S+) :?(\S+)(?: :?(.*))?$", line)
            if not m:
                continue
            source, command, target, text = m.groups()
            text = text or ""
            if command == "JOIN" and not joined and source.startswith(nick + "!"):
                joined = True
                for c in setup:
                    irc.root(c)
            if command != "PRIVMSG" or not source.startswith("root!"):
                continue
            if text.startswith(":"):
                text = text[1:]
            if "Logged in" in text and not logged_in:
                logged_in = True
                next_poll = time.time() + args.settle
                out("LOGGED-IN")
            # blist lines: "%-24.24s  %-40.40s  %s": nick, handle, status
            if text.startswith("Nick ") and "Handle" in text:
                in_blist = True
                seen = {}
                continue
            if in_blist:
                summary = re.match(r"\d+ buddies", text)
                if summary:
                    in_blist = False
                    status = next((v for k, v in seen.items() if args.buddy in k), "Offline (not listed)")
                    if status != last:
                        last = status
                        name, message = status, ""
                        sm = re.match(r"(.*?) \((.*)\)$", status)
                        if sm:
                            name, message = sm.group(1), sm.group(2)
                        out(f"STATUS {args.buddy} {name} | {message}")
                    continue
                parts = re.split(r"\s{2,}", text.strip(), maxsplit=2)
                if len(parts) == 3:
                    seen[parts[1].strip()] = parts[2].strip()
                continue
            out("ROOT " + text)
        if args.control and os.path.exists(args.control):
            with open(args.control) as f:
                f.seek(control_offset)
                data = f.read()
            complete = data[: data.rfind("\n") + 1]
            control_offset += len(complete.encode())
            for c in complete.splitlines():
                c = c.strip()
                if c.startswith("/"):
                    irc.send(c[1:])  # a raw IRC line: "/AWAY :Busy" sets the user's own state
                elif c:
                    irc.root(c)
                if c:
                    out("SENT " + c)
        if logged_in and time.time() >= next_poll and not in_blist:
            irc.root("blist all")
            next_poll = time.time() + args.poll
    out("EXIT time")
    try:
        irc.root("account sipe off")
        time.sleep(1)
        irc.send("QUIT :done")
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
