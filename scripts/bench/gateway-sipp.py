#!/usr/bin/env python3
"""Mapped NOTIFY relay rate of the real gateway between sipp instances on loopback (docs/performance.md, the relay benchmark).

usage: scripts/bench/gateway-sipp.py [--pairs 5000] [--setup-rate 1000] [--rates 1000,2000,3000,...] [--dur 10]
                                     [--bound 2.0] [--directions o2e,e2o] [--allocator jemalloc|glibc]
                                     [--settle 33] [--bin PATH] [--cpu 0] [--reload-every S]
                                     [--stores memory,sqlite,postgres] [--transactions N] [--anchor]
                                     [--threads 1,2]

Run through scripts/bench/gateway-sipp.sh, which builds the release `presence-gateway` first.

For each direction a fresh gateway (release build, `--config` written here: UDP on the OMA side,
TCP on the enterprise side, as the default configuration; only 127.0.0.1, ports the system
chose) runs between sipp instances (scenarios in scripts/bench/sipp/):

  o2e  OMA PIDF NOTIFY in -> enterprise category BENOTIFY out (flow 1).
       Setup: sipp as the OMA presence server (UDP, o2e-oma-server.xml) answers the gateway's PIDF
       SUBSCRIBEs caused by sipp as enterprise watchers (TCP, o2e-enterprise-subscribe.xml, one
       batched category SUBSCRIBE per watcher, PAIRS watchers). Load, per step: sipp sends PIDF
       NOTIFYs in those dialogs (o2e-oma-notify.xml, UDP) at the step's rate, a fresh sipp on the
       watchers' Contact port receives the BENOTIFYs (o2e-enterprise-receive.xml, TCP).
  e2o  enterprise category BENOTIFY in -> OMA PIDF NOTIFY out (flow 2).
       Setup: sipp as the enterprise presence server (TCP, e2o-enterprise-server.xml) answers the
       gateway's batched category SUBSCRIBEs caused by sipp as OMA watchers (UDP,
       e2o-oma-subscribe.xml). Load: sipp sends category BENOTIFYs (e2o-enterprise-benotify.xml,
       TCP), a fresh sipp on the watchers' Contact port answers the PIDF NOTIFYs
       (e2o-oma-receive.xml, UDP).

What is measured: every incoming NOTIFY/BENOTIFY carries in its note "n<k>x" and sipp's
[timestamp] (wall clock, microseconds) taken when sipp builds the message; the receiving sipp
reads both back from the mapped message's note and logs them with its own [timestamp] when it
processes the message. Latency = arrival - send, so it includes both sipps' own queueing, the
kernel's loopback and the gateway (parse, map, serialize). A sent notification fails when no
mapped message with its token arrives within BOUND seconds, or when its transaction failed
(o2e: no 200 from the gateway within sipp's 5 s receive timeout). "achieved" = mapped messages
arrived within the bound / (last arrival - first send). A step is clean with < 1 % failures; the
run stops at the first step that is not clean.

CPU: the gateway's utime+stime over the sender's run (100 % = one core; the gateway runs on one
NIO event loop thread); the sipps' (sender and receiver) from the children's times (they include
the receiver's last BOUND + 1 s, so slightly high); "other": the machine's busy time (/proc/stat)
minus both, i.e. whatever else ran (the 2-core machine is shared). UDP drops: the "drops" counters of /proc/net/udp for the
gateway's OMA socket and for the sipp UDP socket at the other end (o2e: the NOTIFY sender, which
gets the 200s; e2o: the watchers, which get the NOTIFYs) during the step: a full receive buffer.

Memory: the gateway's VmRSS (/proc/PID/status) before the setup, 1 s after the PAIRS pairs are
established, and SETTLE (33) s later, when the setup's UDP server transactions have ended (RFC 3261
Timer J, 32 s); the differences per pair (also the time the setup took), and the subscriptions and
transactions the gateway reports live then (its /metrics). The gateway runs on jemalloc, preloaded
as scripts/run.sh does (--allocator glibc for glibc's malloc, which keeps the holes a setup burst
leaves between the pairs' state).

The anchor (--anchor): in the same invocation, before the gateway, Kamailio (Debian's 5.6) with ONE
worker forwards statefully (tm t_relay, scripts/bench/kamailio-relay.cfg) a MESSAGE carrying a PIDF
body of the mapped notifications' size from one sipp to another (anchor-send.xml,
anchor-receive.xml), stepped through the same rates: one SIP hop per core, what the gateway's relay
of a mapped notification is compared with. Kamailio and its sipps are pinned as the gateway and
its sipps are (--cpu, --sipp-cpu). Each step prints Kamailio's CPU over the sender's whole run and
while the step's load is offered (its first DUR s), and the UDP datagrams the kernel dropped
machine-wide. The two differ once a step fails: the sender then runs on with retransmissions and
timeouts at little CPU, so the whole run's figure (about 60 % at the first failing step) hides a
Kamailio saturated while sending (100 %, its socket dropping thousands of datagrams). Printed at
the end: each side's highest clean rate, its CPU per message at that rate (Kamailio's process
group; the gateway process) and the ratio.

State stores (docs/state.md): --stores runs each direction once per store, each on a fresh
gateway: `memory` (nothing kept), `sqlite` (a file in the run's directory, synchronous FULL, as the
default configuration) and `postgres` (a private cluster made with initdb in a temporary directory,
on a free port of 127.0.0.1, stopped and removed at the end; Debian's postgresql package). Printed
at the end: per direction and store, the pair setup rate and the highest clean relay rate, and the
relay rate of each durable store against `memory` measured in the same run.

Shards (docs/shards.md): --threads runs each direction once per number of the gateway's
`threads:`, each on a fresh gateway. CPU is the gateway process's, all its threads together
(100 % = one core); the CPU per message at the highest clean rate is what carries to a bigger
machine. Printed at the end: per direction, each number's highest clean rate and CPU per message
against one thread's in the same run. On a 2-core machine the sipps take part of the same two
cores: leave --cpu and --sipp-cpu out to let the kernel place the threads.

Every sipp gets 4 MiB socket buffers (-buff_size), as ../shared/peers' Kamailio harness gives its
sipps: with sipp's default a burst (the replies a durable store releases when a batch of changes is
committed) overflowed the watchers' UDP receive buffer, and the datagrams lost counted as the
gateway's failures.

Bounds: every sipp has -timeout and a wall-clock kill; every step lasts at most DUR (<= 20) s of
sending; only 127.0.0.1 is addressed. The gateway gets SIGTERM at the end (SIGKILL after 15 s).
"""
import argparse, csv, os, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SC = os.path.join(HERE, 'sipp')
TCK = os.sysconf('SC_CLK_TCK')


def free_port(kind):
    """A port free for both UDP and TCP on 127.0.0.1 (the system's choice)."""
    for _ in range(50):
        s = socket.socket(socket.AF_INET, kind)
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
        other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if kind == socket.SOCK_STREAM else socket.SOCK_STREAM)
        try:
            other.bind(('127.0.0.1', port))
            return port
        except OSError:
            continue
        finally:
            other.close()
            s.close()
    raise SystemExit('no free port')


def cpu_ticks(pid):
    try:
        with open(f'/proc/{pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except OSError:
        return 0


def udp_rcvbuf_errors():
    """Datagrams the kernel dropped machine-wide because a socket's receive buffer was full."""
    with open('/proc/net/snmp') as f:
        lines = [l.split() for l in f if l.startswith('Udp:')]
    return int(dict(zip(lines[0][1:], lines[1][1:]))['RcvbufErrors'])


def socket_drops(port):
    """Datagrams dropped at the UDP socket bound to 127.0.0.1:port (/proc/net/udp "drops")."""
    want = f'0100007F:{port:04X}'
    with open('/proc/net/udp') as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == want:
                return int(fields[-1])
    return 0


def machine_busy_ticks():
    """Busy jiffies of all CPUs together (/proc/stat)."""
    with open('/proc/stat') as f:
        v = list(map(int, f.readline().split()[1:]))
    user, nice, system, idle, iowait, irq, softirq, steal = (v + [0] * 8)[:8]
    return user + nice + system + irq + softirq + steal


def rss_kib(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


CONFIG = """\
# presence-gateway benchmark configuration (written by scripts/bench/gateway-sipp.py)
{threads}{state}
listen:
  - {{ side: oma, transport: udp, address: 127.0.0.1, port: {gw_oma} }}
  - {{ side: enterprise, transport: tcp, address: 127.0.0.1, port: {gw_ent} }}
enterprise:
  domains: [contoso.com]
  next-hop: "sip:127.0.0.1:{ent_server};transport=tcp"
oma:
  domains: [oma.example]
  next-hop: "sip:127.0.0.1:{oma_server};transport=udp"
peers:
  - {{ name: enterprise-sipp, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }}
  - {{ name: oma-sipp, address: 127.0.0.1, side: oma, network: federated }}
presentities:
  default:
    defaults: {{ sameEnterprise: allow, federated: allow, publicCloud: polite-block }}
subscriptions:
  piggyback-wait-ms: 500
  default-expires: 3600
admin: {{ address: 127.0.0.1, port: {admin} }}
{limits}"""


class Run:
    def __init__(self, args, direction, store='memory', cluster=None, threads=1):
        self.threads = threads
        self.reloads = 0
        self.store = store
        self.cluster = cluster
        self.a = args
        self.direction = direction
        self.work = tempfile.mkdtemp(prefix=f'gbench-{direction}-')
        self.ports = {k: free_port(socket.SOCK_STREAM) for k in ('gw_oma', 'gw_ent', 'oma_server', 'ent_server', 'admin', 'watchers')}
        self.gateway = None
        self.cseq = {}

    def sipp(self, scenario, target, transport, port, extra, timeout, log=None, background=False, load=False):
        cmd = ['sipp', f'127.0.0.1:{target}' if target else None, '-sf', os.path.join(SC, scenario),
               '-i', '127.0.0.1', '-p', str(port), '-t', transport, '-nostdin', '-timeout', f'{timeout}s',
               '-recv_timeout', '5000', '-deadcall_wait', '0', '-max_recv_loops', '100000', '-buff_size', str(4 << 20),
               '-trace_stat', '-stf', os.path.join(self.work, scenario + '.csv'), '-fd', '1']
        if not load:
            cmd += ['-trace_err', '-error_file', os.path.join(self.work, scenario + '.err')]
        cmd = [c for c in cmd if c is not None]
        if log:
            cmd += ['-trace_logs', '-log_file', log]
        cmd += extra
        if self.a.sipp_cpu:
            cmd = ['taskset', '-c', self.a.sipp_cpu] + cmd
        p = subprocess.Popen(cmd, cwd=self.work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        p.wall = timeout + 15
        p.name = scenario
        if background:
            return p
        return self.wait(p)

    @staticmethod
    def wait(p, quiet=False):
        try:
            p.wait(timeout=p.wall)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        err = p.stderr.read() if p.stderr else ''
        if not quiet and p.returncode not in (0, 1, 97, 99):
            print(f'  [{p.name}: exit {p.returncode}] {err.strip()[:300]}', file=sys.stderr)
        return p.returncode

    def stats(self, scenario, *extra):
        path = os.path.join(self.work, scenario + '.csv')
        try:
            with open(path) as f:
                rows = list(csv.reader(f, delimiter=';'))
        except OSError:
            return (0, 0) + tuple(0 for _ in extra)
        col = {n: i for i, n in enumerate(rows[0])}
        last = rows[-1]
        return tuple(int(last[col[name]]) for name in ('SuccessfulCall(C)', 'FailedCall(C)') + extra)

    def start_gateway(self):
        config = os.path.join(self.work, 'gateway.yaml')
        if self.store == 'sqlite':
            state = f'state: {{ store: sqlite, path: {os.path.join(self.work, "state", "gateway.db")} }}'
        elif self.store == 'postgres':
            state = f'state: {{ store: postgres, url: "{self.cluster.url(self.cluster.database())}", node: bench }}'
        else:
            state = 'state: { store: memory }'
        with open(config, 'w') as f:
            limits = f'limits: {{ transactions: {self.a.transactions} }}\n' if self.a.transactions else ''
            # Always written: without it the gateway runs one shard per core.
            threads = f'threads: {self.threads}\n'
            f.write(CONFIG.format(threads=threads, state=state, limits=limits, **self.ports))
        cmd = [self.a.bin, '--config', config, '--log-level', 'warning']
        if self.a.cpu:
            cmd = ['taskset', '-c', self.a.cpu] + cmd
        self.gateway_err = open(os.path.join(self.work, 'gateway.err'), 'w')
        self.gateway = subprocess.Popen(gateway_command(self.a.allocator, cmd), stdout=subprocess.DEVNULL, stderr=self.gateway_err)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(('127.0.0.1', self.ports['gw_ent']), timeout=1).close()
                time.sleep(0.3)
                return
            except OSError:
                if self.gateway.poll() is not None:
                    # What explains it is printed here: the work folder goes unless --keep.
                    self.gateway_err.close()
                    with open(os.path.join(self.work, 'gateway.err')) as f:
                        reason = f.read().strip()[-2000:]
                    raise SystemExit(f'presence-gateway exited ({self.gateway.returncode}):\n{reason}')
                time.sleep(0.2)
        raise SystemExit('presence-gateway did not start listening within 20 s')

    def metric(self, name):
        """The sum of the gateway's Prometheus samples named `name` (all label sets); None if unreadable."""
        try:
            with urllib.request.urlopen(f'http://127.0.0.1:{self.ports["admin"]}/metrics', timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return None
        return sum(float(line.rsplit(' ', 1)[1]) for line in text.splitlines()
                   if line.startswith(name + '{') or line.startswith(name + ' '))

    def stop_gateway(self):
        if self.gateway and self.gateway.poll() is None:
            self.gateway.send_signal(signal.SIGTERM)
            try:
                self.gateway.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.gateway.kill()
                self.gateway.wait()

    # -- setup ---------------------------------------------------------------------------------

    def setup(self):
        n, p = self.a.pairs, self.ports
        log = os.path.join(self.work, 'dialogs.log')
        rate = self.a.setup_rate
        limit = n / rate + 30
        before = rss_kib(self.gateway.pid)
        t0 = time.monotonic()
        if self.direction == 'o2e':
            # A busy sipp retransmits its NOTIFY and gets the gateway's answer to the copy after
            # the call has ended: remembered as a dead call (-deadcall_wait) that 200 is passed
            # over; otherwise sipp takes it for a new call, aborts it and counts it against -m,
            # and real SUBSCRIBEs went unanswered.
            server = self.sipp('o2e-oma-server.xml', None, 'u1', p['oma_server'], ['-m', str(n), '-deadcall_wait', '40000'],
                               limit, log=log, background=True)
            time.sleep(0.5)
            self.sipp('o2e-enterprise-subscribe.xml', p['gw_ent'], 't1', p['watchers'],
                      ['-r', str(rate), '-m', str(n), '-l', str(rate)], limit)
        else:
            server = self.sipp('e2o-enterprise-server.xml', None, 't1', p['ent_server'], ['-m', str(n)], limit, log=log, background=True)
            time.sleep(0.5)
            self.sipp('e2o-oma-subscribe.xml', p['gw_oma'], 'u1', p['watchers'],
                      ['-r', str(rate), '-m', str(n), '-l', str(rate)], limit)
        self.wait(server)
        elapsed = time.monotonic() - t0
        time.sleep(1.0)
        after = rss_kib(self.gateway.pid)
        # The setup's server transactions are kept 32 s after their answer over UDP (RFC 3261
        # §17.2.2 Timer J = 64*T1): measured again when they are gone.
        time.sleep(self.a.settle)
        settled = rss_kib(self.gateway.pid)
        live_transactions = self.metric('sip_transactions_active')
        subscriptions = self.metric('gateway_subscriptions_active')
        live_pairs = int(subscriptions // 2) if subscriptions is not None else 0
        uac = 'o2e-enterprise-subscribe.xml' if self.direction == 'o2e' else 'e2o-oma-subscribe.xml'
        ok, failed = self.stats(uac)
        self.dialogs = []
        with open(log) as f:
            for line in f:
                fields = line.strip().split(';')
                if len(fields) == 6:
                    self.dialogs.append(fields)
        if not self.dialogs:
            raise SystemExit(f'no dialog established: see {self.work}')
        return dict(pairs=ok, failed=failed, dialogs=len(self.dialogs), secs=elapsed, before=before, after=after,
                    per_pair=(after - before) * 1024 / max(ok, 1), settled=settled,
                    transactions=live_transactions, subscriptions=subscriptions, live_pairs=live_pairs,
                    # Per pair still bridged when settled (two subscriptions each, as the gateway
                    # counts them), not per setup that once succeeded.
                    per_pair_settled=(settled - before) * 1024 / max(live_pairs, 1))

    # -- one load step --------------------------------------------------------------------------

    def step(self, rate):
        dur, p = self.a.dur, self.ports
        calls = rate * dur
        inf = os.path.join(self.work, f'step-{rate}.csv')
        with open(inf, 'w') as f:
            f.write('SEQUENTIAL\n')
            for k in range(calls):
                d = self.dialogs[k % len(self.dialogs)]
                key = d[0]
                self.cseq[key] = self.cseq.get(key, 1) + 1
                f.write(';'.join(d + [str(self.cseq[key])]) + '\n')
        log = os.path.join(self.work, f'recv-{rate}.log')
        # The receiver runs until its -timeout: past the sender's sending time plus the bound (a
        # sender that falls behind is cut by its own -timeout of DUR + 5 s).
        recv_life = dur + 5 + int(self.a.bound + 0.999) + 1
        if os.path.exists(log):
            os.remove(log)
        if self.direction == 'o2e':
            recv_sc, send_sc = 'o2e-enterprise-receive.xml', 'o2e-oma-notify.xml'
            receiver = self.sipp(recv_sc, None, 't1', p['watchers'], [], recv_life, log=log, background=True)
            sender_args = (send_sc, p['gw_oma'], 'u1', p['oma_server'])
        else:
            recv_sc, send_sc = 'e2o-oma-receive.xml', 'e2o-enterprise-benotify.xml'
            receiver = self.sipp(recv_sc, None, 'u1', p['watchers'], [], recv_life, log=log, background=True)
            sender_args = (send_sc, p['gw_ent'], 't1', p['ent_server'])
        time.sleep(0.5)
        drops0 = {side: socket_drops(port) for side, port in
                  (('gw', p['gw_oma']), ('sipp', p['watchers'] if self.direction == 'e2o' else p['oma_server']))}
        g0, w0, u0, m0 = cpu_ticks(self.gateway.pid), time.monotonic(), udp_rcvbuf_errors(), machine_busy_ticks()
        rss0 = rss_kib(self.gateway.pid)
        sender = self.sipp(*sender_args, ['-inf', inf, '-r', str(rate), '-rp', '1000', '-m', str(calls),
                                          '-l', str(max(rate * 5, 1000))], dur + 5, background=True, load=True)
        if self.a.reload_every > 0:
            # SIGHUP while the load runs: the configuration is read again and applied; nothing
            # sent may be lost and no dialog dropped (README, "Runtime control").
            while sender.poll() is None:
                time.sleep(self.a.reload_every)
                if sender.poll() is None:
                    os.kill(self.gateway.pid, signal.SIGHUP)
                    self.reloads += 1
        self.wait(sender)
        w1 = time.monotonic()
        g1, m1 = cpu_ticks(self.gateway.pid), machine_busy_ticks()
        # Mapped messages may arrive up to BOUND s after the last send; then the receiver is
        # stopped (its log is written line by line).
        time.sleep(self.a.bound + 1.0)
        # The step's answered requests stay in the transaction table for Timer J (32 s over UDP,
        # RFC 3261 §17.2.2); past the table's size new ones get 503 (limits.transactions). The
        # gauges and counters are at most 1 s behind.
        transactions, rss1 = self.metric('sip_transactions_active'), rss_kib(self.gateway.pid)
        refused_full = self.metric('gateway_security_refusals_total{reason="transactions_full"}')
        drops = {side: socket_drops(port) for side, port in
                 (('gw', p['gw_oma']), ('sipp', p['watchers'] if self.direction == 'e2o' else p['oma_server']))}
        if receiver.poll() is None:
            receiver.kill()
        self.wait(receiver, quiet=True)
        udp_drops = udp_rcvbuf_errors() - u0
        drops = {k: v - drops0[k] for k, v in drops.items()}
        sent_ok, sent_failed, answers = self.stats(send_sc, 'OutOfCallMsgs(C)')
        attempted = sent_ok + sent_failed
        seen = {}
        first_sent, last_recv = float('inf'), 0.0
        try:
            with open(log) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) < 4 or parts[0] != 'R':
                        continue
                    try:
                        num, t_sent, t_recv = int(parts[1]), float(parts[2]), float(parts[-1])
                    except ValueError:
                        continue
                    if num not in seen:
                        seen[num] = t_recv - t_sent
                        first_sent = min(first_sent, t_sent)
                        last_recv = max(last_recv, t_recv)
        except OSError:
            pass
        on_time = [v for v in seen.values() if v <= self.a.bound]
        failures = max(attempted - len(on_time), 0) if attempted else calls
        lat = sorted(on_time)
        def pct(q):
            return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else float('nan')
        span = max(w1 - w0, 1e-6)
        cpu = (g1 - g0) / TCK / span * 100
        machine = (m1 - m0) / TCK / span * 100
        window = max(last_recv - first_sent, 1e-6)
        return dict(rate=rate, attempted=attempted, sender_failed=sent_failed, received=len(seen), on_time=len(on_time),
                    failures=failures, fail_pct=100.0 * failures / max(attempted, 1), achieved=len(on_time) / window, answered=answers, udp_drops=udp_drops, drops=drops, machine=machine,
                    p50=pct(0.50), p99=pct(0.99), gw_cpu=cpu, secs=span, transactions=transactions,
                    rss_growth_mib=(rss1 - rss0) / 1024, refused_full=refused_full,
                    gw_us=(g1 - g0) / TCK / max(len(on_time), 1) * 1e6)


def group_cpu_ticks(pgid):
    """utime + stime of every process in the process group `pgid` (Kamailio forks its workers)."""
    total = 0
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total


def run_anchor(args):
    """Kamailio's one-worker stateful relay stepped through `args.rates` (see the module doc)."""
    work = tempfile.mkdtemp(prefix='gbench-anchor-')
    kam_port, uas_port, uac_port = (free_port(socket.SOCK_DGRAM) for _ in range(3))
    life = len(args.rates) * (args.dur + 10) + 30
    common = ['-i', '127.0.0.1', '-t', 'u1', '-nostdin', '-buff_size', str(4 << 20), '-max_recv_loops', '100000']
    # Pinned as the gateway and its sipps are (--cpu, --sipp-cpu): the same cores on both sides.
    pin_sipp = ['taskset', '-c', args.sipp_cpu] if args.sipp_cpu else []
    pin_kam = ['taskset', '-c', args.cpu] if args.cpu else []
    uas = subprocess.Popen(pin_sipp + ['sipp', '-sf', os.path.join(SC, 'anchor-receive.xml'), '-p', str(uas_port),
                                       '-timeout', f'{life}s'] + common,
                           cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = open(os.path.join(work, 'kamailio.log'), 'w')
    # setsid: a process group of its own, whose CPU is Kamailio's and which is stopped as a whole.
    kam = subprocess.Popen(['setsid'] + pin_kam + ['/usr/sbin/kamailio', '-f', os.path.join(HERE, 'kamailio-relay.cfg'),
                                                   '-DD', '-E', '-m', '1024', '-M', '16', '-l', f'udp:127.0.0.1:{kam_port}',
                                                   '-Y', work, '-A', f'TARGET="sip:127.0.0.1:{uas_port}"', '-A', 'CHILDREN=1'],
                           stdout=log, stderr=log)
    print('\n== anchor: Kamailio 1 worker, stateful relay (t_relay) of a PIDF MESSAGE between two sipps (UDP); '
          f'Kamailio {"pinned to CPU " + args.cpu if args.cpu else "unpinned"}, '
          f'sipps {"pinned to CPU " + args.sipp_cpu if args.sipp_cpu else "unpinned"}')
    best = None
    try:
        deadline = time.monotonic() + 15
        while socket_bound(kam_port) is False and time.monotonic() < deadline:
            if kam.poll() is not None:
                raise SystemExit(f'kamailio exited: see {work}/kamailio.log')
            time.sleep(0.2)
        time.sleep(0.5)
        print(f'{"offered/s":>9} {"sent":>7} {"ok":>7} {"achieved/s":>10} {"fail%":>6} {"kamailio CPU%":>13} '
              f'{"while sending":>13} {"us/msg":>7} {"UDP drops":>9}  clean')
        for rate in args.rates:
            calls = rate * args.dur
            stat = os.path.join(work, f'send-{rate}.csv')
            c0, w0, u0 = group_cpu_ticks(kam.pid), time.monotonic(), udp_rcvbuf_errors()
            sender = subprocess.Popen(pin_sipp + ['sipp', f'127.0.0.1:{kam_port}', '-sf', os.path.join(SC, 'anchor-send.xml'),
                                                  '-p', str(uac_port), '-r', str(rate), '-rp', '1000', '-m', str(calls),
                                                  '-l', str(max(rate * 5, 1000)), '-timeout', f'{args.dur + 5}s',
                                                  '-trace_stat', '-stf', stat, '-fd', '1'] + common,
                                      cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            # Kamailio's CPU while the step's load is offered, apart from the sender's tail (its
            # last answers, or retransmissions and timeouts once the step failed), over which
            # the whole step's figure is averaged.
            time.sleep(args.dur)
            offered = (group_cpu_ticks(kam.pid) - c0) / TCK / args.dur * 100
            try:
                sender.wait(timeout=20)
            except subprocess.TimeoutExpired:
                sender.kill()
                sender.wait()
            span = max(time.monotonic() - w0, 1e-6)
            ticks = group_cpu_ticks(kam.pid) - c0
            drops = udp_rcvbuf_errors() - u0
            with open(stat) as f:
                rows = list(csv.reader(f, delimiter=';'))
            col = {n: i for i, n in enumerate(rows[0])}
            ok, failed = (int(rows[-1][col[n]]) for n in ('SuccessfulCall(C)', 'FailedCall(C)'))
            fail_pct = 100.0 * (calls - ok) / calls
            clean = fail_pct < 1.0 and sender.returncode in (0, 1, 97, 99)
            st = dict(rate=rate, achieved=ok / span, cpu=ticks / TCK / span * 100, us=ticks / TCK / max(ok, 1) * 1e6)
            print(f'{rate:>9} {ok + failed:>7} {ok:>7} {st["achieved"]:>10.0f} {fail_pct:>5.2f}% {st["cpu"]:>13.0f} '
                  f'{offered:>13.0f} {st["us"]:>7.0f} {drops:>9}  {"yes" if clean else "no"}', flush=True)
            if not clean:
                break
            best = st
            time.sleep(1)
        print(f'highest clean rate (anchor): {best["rate"]}/s offered, {best["achieved"]:.0f}/s achieved' if best
              else 'highest clean rate (anchor): none')
        return best
    finally:
        try:
            os.killpg(kam.pid, signal.SIGTERM)
            kam.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(kam.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        uas.kill()
        uas.wait()
        log.close()
        if args.keep:
            print(f'(files kept in {work})')
        else:
            shutil.rmtree(work, ignore_errors=True)


def socket_bound(port):
    """Whether a UDP socket is bound to 127.0.0.1:port (/proc/net/udp)."""
    want = f'0100007F:{port:04X}'
    with open('/proc/net/udp') as f:
        return any(line.split()[1] == want for line in f.readlines()[1:])


def gateway_command(allocator, cmd):
    """`cmd` on jemalloc set up as scripts/run.sh does it (scripts/allocator.sh), or on glibc's malloc."""
    if allocator == 'glibc':
        return cmd
    return ['bash', '-c', f'source {os.path.join(ROOT, "scripts", "allocator.sh")}; '
            '[ -n "${LD_PRELOAD:-}" ] || { echo "libjemalloc.so.2 not found (apt-get install libjemalloc2)" >&2; exit 1; }; '
            'exec "$@"', 'gateway'] + cmd


def count(value):
    return '?' if value is None else f'{value:.0f}'


def children_cpu():
    t = os.times()
    return t.children_user + t.children_system


class PostgresCluster:
    """A private PostgreSQL cluster for the run: initdb into a temporary directory, the server on a
    free port of 127.0.0.1 only, trust authentication (loopback, this run only); as root its
    programs run as the postgres user, which initdb requires."""
    USER = 'gateway'

    def __init__(self):
        versions = sorted(os.listdir('/usr/lib/postgresql'), reverse=True) if os.path.isdir('/usr/lib/postgresql') else []
        bins = [f'/usr/lib/postgresql/{v}/bin' for v in versions if os.access(f'/usr/lib/postgresql/{v}/bin/initdb', os.X_OK)]
        if not bins:
            raise SystemExit('PostgreSQL not found (bash scripts/setup.sh installs it)')
        self.bin = bins[0]
        self.dir = tempfile.mkdtemp(prefix='gbench-pg-')
        self.port = free_port(socket.SOCK_STREAM)
        self.count = 0
        if os.getuid() == 0:
            shutil.chown(self.dir, 'postgres', 'postgres')
        self.run('initdb', '-D', self.dir + '/data', '-U', self.USER, '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync')
        self.run('pg_ctl', '-D', self.dir + '/data', '-l', self.dir + '/server.log', '-w', '-t', '30',
                 '-o', f'-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1', 'start')

    def run(self, program, *args):
        cmd = [f'{self.bin}/{program}', *args]
        if os.getuid() == 0:
            cmd = ['runuser', '-u', 'postgres', '--'] + cmd
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)

    def database(self):
        """A new database for one gateway."""
        self.count += 1
        name = f'bench{self.count}'
        subprocess.run(['psql', '-X', '-q', '-h', '127.0.0.1', '-p', str(self.port), '-U', self.USER, '-d', 'postgres',
                        '-c', f'CREATE DATABASE {name}'], check=True, stdout=subprocess.DEVNULL, timeout=30)
        return name

    def url(self, database):
        return f'postgres://{self.USER}@127.0.0.1:{self.port}/{database}'

    def remove(self):
        try:
            self.run('pg_ctl', '-D', self.dir + '/data', '-m', 'immediate', '-w', '-t', '30', 'stop')
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def run_direction(args, direction, store='memory', cluster=None, threads=1):
    title = {'o2e': 'OMA PIDF NOTIFY in -> enterprise BENOTIFY out (UDP in, TCP out)',
             'e2o': 'enterprise BENOTIFY in -> OMA PIDF NOTIFY out (TCP in, UDP out)'}[direction]
    r = Run(args, direction, store, cluster, threads)
    print(f'\n== {direction}, store {store}, threads {threads}: {title}')
    try:
        r.start_gateway()
        s = r.setup()
        print(f'setup: {s["pairs"]} of {args.pairs} pairs established ({s["failed"]} failed) in {s["secs"]:.1f} s '
              f'({s["pairs"] / max(s["secs"], 1e-6):.0f} pairs/s); '
              f'gateway RSS {s["before"] / 1024:.1f} -> {s["after"] / 1024:.1f} MiB = {s["per_pair"]:.0f} bytes/pair; '
              f'{args.settle:.0f} s later {s["settled"] / 1024:.1f} MiB with {count(s["subscriptions"])} subscriptions '
              f'({s["live_pairs"]} pairs) and {count(s["transactions"])} transactions live = {s["per_pair_settled"]:.0f} bytes/pair live (target <= 2048)')
        print(f'{"offered/s":>9} {"sent":>7} {"answered":>8} {"achieved/s":>10} {"mapped":>7} {"fail%":>6} {"p50 ms":>7} {"p99 ms":>8} {"gw CPU%":>7} {"sipp CPU%":>9} {"other CPU%":>10} {"UDP drops gw/sipp":>17} {"txns live":>9} {"table full":>10} {"RSS +MiB":>8}  clean')
        best = None
        for rate in args.rates:
            c0 = children_cpu()
            st = r.step(rate)
            sipp_cpu = (children_cpu() - c0) / st['secs'] * 100
            # Everything else on the machine while the sender ran (other builds, tests).
            others = max(st['machine'] - st['gw_cpu'] - sipp_cpu, 0)
            clean = st['fail_pct'] < 1.0
            answered = str(st['answered']) if direction == 'o2e' else '-'
            print(f'{rate:>9} {st["attempted"]:>7} {answered:>8} {st["achieved"]:>10.0f} {st["on_time"]:>7} {st["fail_pct"]:>5.2f}% '
                  f'{st["p50"]:>7.1f} {st["p99"]:>8.1f} {st["gw_cpu"]:>7.0f} {sipp_cpu:>9.0f} {others:>10.0f} {str(st["drops"]["gw"]) + "/" + str(st["drops"]["sipp"]):>17} '
                  f'{count(st["transactions"]):>9} {count(st["refused_full"]):>10} {st["rss_growth_mib"]:>8.1f}  {"yes" if clean else "no"}', flush=True)
            if clean:
                best = st
            else:
                break
        if args.reload_every > 0:
            with open(os.path.join(r.work, 'gateway.err')) as f:
                refused = sum('configuration not reloaded' in line for line in f)
            print(f'reloads: {r.reloads} SIGHUPs during the steps, {refused} refused; '
                  f'{r.metric("gateway_subscriptions_active")} subscriptions active after the last step')
        if best:
            print(f'highest clean rate ({direction}): {best["rate"]}/s offered, {best["achieved"]:.0f}/s achieved, '
                  f'p99 {best["p99"]:.1f} ms')
        else:
            print(f'highest clean rate ({direction}): none')
        return s, best
    finally:
        r.stop_gateway()
        if args.keep:
            print(f'(files kept in {r.work})')
        else:
            shutil.rmtree(r.work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--pairs', type=int, default=5000)
    ap.add_argument('--setup-rate', type=int, default=1000)
    ap.add_argument('--rates', default='1000,2000,3000,4000,5000,6000,8000,10000,12000')
    ap.add_argument('--dur', type=int, default=10)
    ap.add_argument('--bound', type=float, default=2.0, help='seconds a mapped message may take to count')
    ap.add_argument('--directions', default='o2e,e2o')
    ap.add_argument('--cpu', default='', help='taskset core list for the gateway, e.g. 0')
    ap.add_argument('--sipp-cpu', default='', help='taskset core list for the sipps, e.g. 1')
    ap.add_argument('--settle', type=float, default=33.0, help='seconds after the setup before RSS is read again (Timer J)')
    ap.add_argument('--keep', action='store_true', help='keep the sipp logs and statistics')
    ap.add_argument('--allocator', choices=('jemalloc', 'glibc'), default='jemalloc',
                    help="the gateway's malloc: jemalloc preloaded as scripts/run.sh does (default), or glibc's")
    ap.add_argument('--reload-every', type=float, default=0.0,
                    help='send the gateway SIGHUP (a configuration reload) every this many seconds during each step')
    ap.add_argument('--stores', default='memory',
                    help='state stores to run each direction with, in order: memory, sqlite, postgres (docs/state.md)')
    ap.add_argument('--transactions', type=int, default=0,
                    help="the gateway's limits.transactions (0: its default): transactions each side holds")
    ap.add_argument('--anchor', action='store_true',
                    help="first run Kamailio's one-worker stateful relay through the same rates, and compare")
    ap.add_argument('--threads', default='1',
                    help="the gateway's threads: (shards) to run each direction with, in order, e.g. 1,2")
    ap.add_argument('--bin', default=os.path.join(ROOT, '.build', 'release', 'presence-gateway'))
    a = ap.parse_args()
    a.threads = [max(1, min(int(x), 64)) for x in a.threads.split(',')]
    a.dur = max(1, min(a.dur, 20))
    a.pairs = max(1, min(a.pairs, 100_000))
    a.rates = [int(x) for x in a.rates.split(',')]
    if not os.access(a.bin, os.X_OK):
        raise SystemExit(f'{a.bin} not found: swift build -c release --product presence-gateway')
    if not shutil.which('sipp'):
        raise SystemExit('sipp not found (apt-get install sip-tester)')
    if a.allocator == 'jemalloc':
        check = subprocess.run(gateway_command('jemalloc', ['true']), capture_output=True, text=True)
        if check.returncode != 0:
            raise SystemExit(check.stderr.strip() or 'jemalloc cannot be preloaded (scripts/allocator.sh)')
    print(f'gateway-sipp: {a.pairs} pairs per direction, steps of {a.dur} s, failure bound {a.bound} s, '
          f'rates {a.rates}; gateway {"pinned to CPU " + a.cpu if a.cpu else "unpinned"}, {a.allocator} malloc')
    stores = a.stores.split(',')
    if any(store not in ('memory', 'sqlite', 'postgres') for store in stores):
        raise SystemExit(f'--stores: memory, sqlite or postgres, not {a.stores}')
    anchor = run_anchor(a) if a.anchor else None
    cluster = PostgresCluster() if 'postgres' in stores else None
    results = {}
    try:
        for d in [d for d in a.directions.split(',') if d]:
            for store in stores:
                for threads in a.threads:
                    results[d, store, threads] = run_direction(a, d, store, cluster, threads)
    finally:
        if cluster:
            cluster.remove()
    if a.anchor:
        print('\n== against the anchor (Kamailio, 1 worker, stateful relay), same run')
        print(f'{"direction":<9} {"store":<9} {"threads":>7} {"clean/s":>8} {"us/msg":>7} {"anchor/s":>8} {"us/msg":>7} {"ratio":>6}')
        for (d, store, threads), (_, best) in results.items():
            if best and anchor:
                print(f'{d:<9} {store:<9} {threads:>7} {best["achieved"]:>8.0f} {best["gw_us"]:>7.0f} {anchor["achieved"]:>8.0f} '
                      f'{anchor["us"]:>7.0f} {best["achieved"] / anchor["achieved"]:>5.2f}x')
            else:
                print(f'{d:<9} {store:<9} {threads:>7} (no clean step on one side)')
    if len(stores) > 1:
        print('\n== stores, same run')
        print(f'{"direction":<9} {"store":<9} {"setup pairs/s":>13} {"clean relay/s":>13} {"vs memory":>9}')
        for (d, store, threads), (setup, best) in results.items():
            rate = best['achieved'] if best else 0.0
            base = results.get((d, 'memory', threads), (None, None))[1]
            ratio = f'{rate / base["achieved"]:.2f}x' if base and best else '-'
            print(f'{d:<9} {store:<9} {setup["pairs"] / max(setup["secs"], 1e-6):>13.0f} {rate:>13.0f} {ratio:>9}')

    if len(a.threads) > 1:
        print('\n== threads, same run (targets: clean rate >= 1.25x one thread\'s, CPU per message within 10 %)')
        print(f'{"direction":<9} {"store":<9} {"threads":>7} {"clean/s":>8} {"us/msg":>7} {"rate vs 1":>9} {"CPU vs 1":>8}')
        for (d, store, threads), (_, best) in results.items():
            base = results.get((d, store, a.threads[0]), (None, None))[1]
            if best and base:
                print(f'{d:<9} {store:<9} {threads:>7} {best["achieved"]:>8.0f} {best["gw_us"]:>7.0f} '
                      f'{best["achieved"] / base["achieved"]:>8.2f}x {best["gw_us"] / base["gw_us"]:>7.2f}x')
            else:
                print(f'{d:<9} {store:<9} {threads:>7} (no clean step)')


if __name__ == '__main__':
    main()
