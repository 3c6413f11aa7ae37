#!/usr/bin/env python3
"""Soak: the release gateway under bounded subscription churn for MINUTES, its memory sampled.

usage: scripts/soak.py [--minutes 30] [--rate 5] [--oma-rate 2] [--hold 0] [--watcher-expires 60]
                       [--round 60] [--allocator jemalloc|glibc] [--bin PATH] [--keep]

Run through scripts/soak.sh, which builds the release `presence-gateway` first.

Peers, all on 127.0.0.1 with ports the system chose (UDP on both sides of the gateway):
  - Kamailio as the OMA domain (Peers/kamailio: presence server of oma.example, relaying
    contoso.com to the gateway);
  - sipp as the enterprise edge (Peers/sipp/enterprise-edge.xml, a UAS for every category
    SUBSCRIBE the gateway sends: 200 with the first notification piggybacked, a BENOTIFY, 200 to
    refreshes and to the unsubscribe, a final NOTIFY);
  - per round (ROUND seconds), in parallel: sipp PUBLISHing new states of 50 OMA users at
    Kamailio (RFC 3903), sipp as enterprise watchers (Peers/sipp/enterprise-watcher-single.xml:
    category SUBSCRIBE to an OMA user through the gateway, BENOTIFYs, hold, refresh, unsubscribe;
    flow 1) at RATE per second, and sipp as OMA watchers through Kamailio
    (Peers/sipp/watcher.xml: PIDF SUBSCRIBE to an enterprise user, NOTIFY, hold, refresh,
    unsubscribe; flow 2) at OMA_RATE per second. Each watcher pauses HOLD seconds before its
    refresh and asks WATCHER_EXPIRES (60) seconds, so a watcher whose sipp call aborts (a NOTIFY
    arriving while it pauses) leaves a subscription the gateway expires within a minute.
Every sipp has -timeout and a wall-clock kill (and -nd: no BYE on abort); new subscriptions stop
at MINUTES, then the last round drains.

Measured: the gateway's VmRSS (/proc/PID/status) every 10 s, with the subscriptions and
transactions it reports live (/metrics); printed as a series, with the slope after warm-up (the
first quarter, at least 2 min, left out). At the end, after the 32 s a UDP server transaction
lingers (RFC 3261 §17.2.2 Timer J = 64*T1) plus margin (SETTLE, 45 s), and at most
WATCHER_EXPIRES + 35 s more for abandoned subscriptions to expire: /health must answer 200, and
/metrics `gateway_subscriptions_active` and `sip_transactions_active` must be 0 (no dialog and no
transaction left). Exit status 0 when both hold.
"""
import argparse, csv, os, random, shutil, signal, socket, subprocess, sys, tempfile, threading, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEERS = os.path.join(ROOT, 'Peers')


def free_port():
    """A port free for both UDP and TCP on 127.0.0.1 (the system's choice)."""
    for _ in range(50):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind(('127.0.0.1', port))
            return port
        except OSError:
            continue
        finally:
            u.close()
            s.close()
    raise SystemExit('no free port')


def rss_kib(pid):
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def http(port, path):
    """(status, body) of GET http://127.0.0.1:port/path; (0, error) when unreachable."""
    try:
        with urllib.request.urlopen(f'http://127.0.0.1:{port}{path}', timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def metric(text, name):
    """The sum of the Prometheus samples named `name` (all label sets), None when absent."""
    values = [float(line.rsplit(' ', 1)[1]) for line in text.splitlines()
              if line.startswith(name + '{') or line.startswith(name + ' ')]
    return sum(values) if values else None


CONFIG = """\
# presence-gateway soak configuration (written by scripts/soak.py)
state: {{ store: memory }}
listen:
  - {{ side: oma, transport: udp, address: 127.0.0.1, port: {gw_oma} }}
  - {{ side: enterprise, transport: udp, address: 127.0.0.1, port: {gw_ent} }}
enterprise:
  domains: [contoso.com]
  next-hop: "sip:127.0.0.1:{edge};transport=udp"
oma:
  domains: [oma.example]
  next-hop: "sip:127.0.0.1:{kam};transport=udp"
peers:
  - {{ name: enterprise-edge, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }}
  - {{ name: kamailio, address: 127.0.0.1, port: {kam}, side: oma, network: federated }}
presentities:
  default:
    defaults: {{ sameEnterprise: allow, federated: allow, publicCloud: polite-block }}
subscriptions:
  piggyback-wait-ms: 500
  default-expires: 600
admin: {{ address: 127.0.0.1, port: {admin} }}
"""

ACTIVITIES = ['busy', 'away', 'on-the-phone', 'meal', 'meeting', 'vacation', 'appointment', 'unknown']


class Soak:
    def __init__(self, a):
        self.a = a
        self.work = tempfile.mkdtemp(prefix='soak-')
        self.ports = {k: free_port() for k in ('gw_oma', 'gw_ent', 'kam', 'edge', 'admin', 'ent_w', 'oma_w', 'pub')}
        self.kam_dir = ('/dev/shm/' if os.path.isdir('/dev/shm') else tempfile.gettempdir() + '/') + os.path.basename(self.work) + '-kam'
        self.procs = []
        self.samples = []
        self.stop_sampling = threading.Event()
        self.totals = {}

    def log(self, *args):
        print(*args, flush=True)

    # -- peers -----------------------------------------------------------------------------------

    def scenario(self, name, fields):
        """A Peers/sipp scenario with its -key names replaced by -inf fields ([watcher] -> [field0] ...)."""
        with open(os.path.join(PEERS, 'sipp', name)) as f:
            text = f.read()
        for i, key in enumerate(fields):
            text = text.replace(f'[{key}]', f'[field{i}]')
        # Watchers ask 60 s (RFC 6665 §4.1.2.1), so one whose sipp call aborted (an unexpected
        # NOTIFY during its pause) is expired by the gateway within a minute instead of ten.
        text = text.replace('Expires: 600', f'Expires: {self.a.watcher_expires}')
        # The watchers ask for no rate control (RFC 6446).
        text = text.replace('Event: [event]', 'Event: presence')
        path = os.path.join(self.work, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def sipp(self, name, scenario, remote, port, extra, life, background=True):
        cmd = ['sipp'] + ([f'127.0.0.1:{remote}'] if remote else []) + [
            '-sf', scenario, '-i', '127.0.0.1', '-p', str(port), '-t', 'u1', '-nostdin', '-timeout', f'{life}s',
            '-recv_timeout', '10000', '-max_recv_loops', '100000', '-trace_stat', '-stf', os.path.join(self.work, name + '.csv'),
            '-fd', '5', '-trace_err', '-error_file', os.path.join(self.work, name + '.err')] + extra
        p = subprocess.Popen(cmd, cwd=self.work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        p.wall, p.name = life + 20, name
        self.procs.append(p)
        if not background:
            self.wait(p)
        return p

    @staticmethod
    def wait(p):
        try:
            p.wait(timeout=p.wall)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        return p.returncode

    def stats(self, name):
        """(successful, failed) calls of a sipp run, from its -trace_stat file."""
        try:
            with open(os.path.join(self.work, name + '.csv')) as f:
                rows = list(csv.reader(f, delimiter=';'))
            col = {n: i for i, n in enumerate(rows[0])}
            return int(rows[-1][col['SuccessfulCall(C)']]), int(rows[-1][col['FailedCall(C)']])
        except (OSError, IndexError, KeyError, ValueError):
            return 0, 0

    def start(self):
        p = self.ports
        life = int(self.a.minutes * 60) + self.a.round + 180
        # The enterprise edge first: it answers the gateway's category SUBSCRIBEs for the whole run.
        self.edge = self.sipp('edge', os.path.join(PEERS, 'sipp', 'enterprise-edge.xml'), None, p['edge'],
                              ['-m', '10000000', '-key', 'avail1', '3500', '-key', 'avail2', '15500', '-key', 'expires', '600',
                               '-d', '1000', '-l', '100000'], life)
        config = os.path.join(self.work, 'gateway.yaml')
        with open(config, 'w') as f:
            f.write(CONFIG.format(**p))
        cmd = [self.a.bin, '--config', config, '--log-level', 'warning']
        if self.a.allocator == 'jemalloc':
            cmd = ['bash', '-c', f'source {os.path.join(ROOT, "scripts", "allocator.sh")}; '
                   '[ -n "${LD_PRELOAD:-}" ] || { echo "libjemalloc.so.2 not found (apt-get install libjemalloc2)" >&2; exit 1; }; '
                   'exec "$@"', 'gateway'] + cmd
        self.gateway_err = open(os.path.join(self.work, 'gateway.err'), 'w')
        self.gateway = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.gateway_err)
        deadline = time.monotonic() + 30
        while http(p['admin'], '/health')[0] != 200:
            if self.gateway.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f'presence-gateway did not start: see {self.work}/gateway.err')
            time.sleep(0.3)
        env = dict(os.environ, KAM_RUNDIR=self.kam_dir, KAM_PORT=str(p['kam']), KAM_GATEWAY=f'sip:127.0.0.1:{p["gw_oma"]}',
                   KAM_SHM_MB='512')
        r = subprocess.run(['bash', os.path.join(PEERS, 'kamailio', 'run-kamailio.sh'), 'start'], env=env,
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise SystemExit(f'Kamailio did not start: {r.stdout} {r.stderr}')
        self.log(f'gateway pid {self.gateway.pid} ({self.a.allocator} malloc), OMA udp:{p["gw_oma"]}, enterprise udp:{p["gw_ent"]}, '
                 f'admin :{p["admin"]}; Kamailio :{p["kam"]}; edge sipp :{p["edge"]}; work {self.work}')

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if getattr(self, 'gateway', None) and self.gateway.poll() is None:
            self.gateway.send_signal(signal.SIGTERM)
            try:
                self.gateway.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.gateway.kill()
                self.gateway.wait()
        subprocess.run(['bash', os.path.join(PEERS, 'kamailio', 'run-kamailio.sh'), 'stop'],
                       env=dict(os.environ, KAM_RUNDIR=self.kam_dir), capture_output=True, timeout=30)
        shutil.rmtree(self.kam_dir, ignore_errors=True)
        if not self.a.keep:
            shutil.rmtree(self.work, ignore_errors=True)

    # -- sampling --------------------------------------------------------------------------------

    def sample_loop(self):
        t0 = time.monotonic()
        while not self.stop_sampling.is_set():
            status, text = http(self.ports['admin'], '/metrics')
            subs = metric(text, 'gateway_subscriptions_active') if status == 200 else None
            txs = metric(text, 'sip_transactions_active') if status == 200 else None
            # Under jemalloc the gateway runs as `bash -c ... exec`: the same pid.
            sample = (time.monotonic() - t0, rss_kib(self.gateway.pid), subs, txs)
            self.samples.append(sample)
            self.log(f'  t={sample[0]:6.0f}s  RSS {sample[1] / 1024:7.1f} MiB  subscriptions {fmt(subs):>5}  transactions {fmt(txs):>5}')
            self.stop_sampling.wait(10)

    # -- churn -----------------------------------------------------------------------------------

    def round(self, k, seconds):
        p, a = self.ports, self.a
        calls = max(1, int(a.rate * seconds))
        oma_calls = max(1, int(a.oma_rate * seconds))
        life = seconds + a.hold + 60
        rnd = random.Random(k)
        pub_inf = os.path.join(self.work, f'pub-{k}.csv')
        with open(pub_inf, 'w') as f:
            f.write('SEQUENTIAL\n')
            for i in range(50):
                f.write(f'u{i};{rnd.choice(ACTIVITIES)};round {k}\n')
        ent_inf = os.path.join(self.work, f'ent-{k}.csv')
        with open(ent_inf, 'w') as f:
            f.write('SEQUENTIAL\n')
            for i in range(calls):
                f.write(f'sip:w{(k * calls + i) % 400}@contoso.com;sip:u{rnd.randrange(50)}@oma.example\n')
        oma_inf = os.path.join(self.work, f'oma-{k}.csv')
        with open(oma_inf, 'w') as f:
            f.write('SEQUENTIAL\n')
            for i in range(oma_calls):
                f.write(f'sip:v{(k * oma_calls + i) % 400}@oma.example;sip:e{rnd.randrange(50)}@contoso.com;application/pidf+xml\n')
        pub = self.sipp(f'pub-{k}', self.pub_scenario, p['kam'], p['pub'], ['-inf', pub_inf, '-m', '50', '-r', '10'], 60)
        ent = self.sipp(f'ent-{k}', self.ent_scenario, p['gw_ent'], p['ent_w'],
                        ['-inf', ent_inf, '-m', str(calls), '-r', str(a.rate), '-d', str(a.hold * 1000), '-l', '2000', '-nd'], life)
        oma = self.sipp(f'oma-{k}', self.oma_scenario, p['kam'], p['oma_w'],
                        ['-inf', oma_inf, '-m', str(oma_calls), '-r', str(a.oma_rate), '-d', str(a.hold * 1000), '-l', '2000',
                         '-set', 'notifies', '1', '-nd'], life)
        for proc in (pub, ent, oma):
            self.wait(proc)
            self.procs.remove(proc)
        for name, key in ((f'pub-{k}', 'publish'), (f'ent-{k}', 'flow 1 (enterprise watchers)'), (f'oma-{k}', 'flow 2 (OMA watchers)')):
            ok, failed = self.stats(name)
            tot = self.totals.setdefault(key, [0, 0])
            tot[0] += ok
            tot[1] += failed

    def run(self):
        a = self.a
        self.pub_scenario = self.scenario('oma-publish.xml', ['user', 'activity', 'note'])
        self.ent_scenario = self.scenario('enterprise-watcher-single.xml', ['watcher', 'resource'])
        self.oma_scenario = self.scenario('watcher.xml', ['watcher', 'resource', 'accept'])
        self.start()
        sampler = threading.Thread(target=self.sample_loop, daemon=True)
        sampler.start()
        end = time.monotonic() + a.minutes * 60
        k = 0
        while time.monotonic() < end:
            seconds = min(a.round, max(1, int(end - time.monotonic())))
            self.round(k, seconds)
            k += 1
            self.log(f'  round {k} done: ' + ', '.join(f'{n} {v[0]} ok/{v[1]} failed' for n, v in self.totals.items()))
        # Drained: every watcher has unsubscribed. Wait for the transactions' linger (Timer J).
        self.log('churn over; waiting for the 32 s transaction linger (RFC 3261 §17.2.2 Timer J) and the final NOTIFYs')
        t_end = time.monotonic()
        time.sleep(a.settle)
        # Subscriptions of watchers whose sipp call aborted end at their expiry (WATCHER_EXPIRES
        # s after their last refresh): polled for at most that long again.
        deadline = time.monotonic() + a.watcher_expires + 35
        while time.monotonic() < deadline:
            status, text = http(self.ports['admin'], '/metrics')
            if status == 200 and metric(text, 'gateway_subscriptions_active') == 0 and metric(text, 'sip_transactions_active') == 0:
                break
            time.sleep(5)
        self.drained_after = time.monotonic() - t_end
        self.stop_sampling.set()
        sampler.join(timeout=15)
        status, text = http(self.ports['admin'], '/metrics')
        subs = metric(text, 'gateway_subscriptions_active') if status == 200 else None
        txs = metric(text, 'sip_transactions_active') if status == 200 else None
        health, body = http(self.ports['admin'], '/health')
        final_rss = rss_kib(self.gateway.pid)
        self.report(health, body, subs, txs, final_rss)
        return health == 200 and subs == 0 and txs == 0

    def report(self, health, body, subs, txs, final_rss):
        s = self.samples
        print('\nseries (t s, RSS MiB):')
        print(', '.join(f'{t:.0f}:{r / 1024:.1f}' for t, r, _, _ in s))
        warm = max(120.0, (s[-1][0] if s else 0) / 4)
        after = [(t, r) for t, r, _, _ in s if t >= warm]
        if len(after) >= 3:
            n = len(after)
            mt = sum(t for t, _ in after) / n
            mr = sum(r for _, r in after) / n
            slope = sum((t - mt) * (r - mr) for t, r in after) / max(sum((t - mt) ** 2 for t, _ in after), 1e-9)
            rs = [r for _, r in after]
            print(f'after warm-up ({warm:.0f} s): RSS {min(rs) / 1024:.1f}-{max(rs) / 1024:.1f} MiB, '
                  f'first {rs[0] / 1024:.1f}, last {rs[-1] / 1024:.1f}, slope {slope * 600 / 1024:+.2f} MiB per 10 min')
        print('calls: ' + ', '.join(f'{n} {v[0]} ok / {v[1]} failed' for n, v in self.totals.items()))
        print(f'end, {self.drained_after:.0f} s after the churn: /health {health} {body.strip()[:200]}')
        print(f'end: gateway_subscriptions_active {fmt(subs)}, sip_transactions_active {fmt(txs)}, RSS {final_rss / 1024:.1f} MiB')
        ok = health == 200 and subs == 0 and txs == 0
        print('soak: ' + ('PASS (healthy, no dialog and no transaction left)' if ok else 'FAIL'))


def fmt(value):
    return '?' if value is None else f'{value:.0f}'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--minutes', type=float, default=30)
    ap.add_argument('--rate', type=float, default=5, help='new enterprise watchers (flow 1) per second')
    ap.add_argument('--oma-rate', type=float, default=2, help='new OMA watchers (flow 2) per second')
    ap.add_argument('--hold', type=int, default=0, help='seconds each watcher pauses before refresh + unsubscribe (a NOTIFY during the pause aborts its sipp call)')
    ap.add_argument('--watcher-expires', type=int, default=60, help='Expires the watchers ask (RFC 6665 §4.1.2.1)')
    ap.add_argument('--round', type=int, default=60, help='seconds of new subscriptions per round')
    ap.add_argument('--settle', type=float, default=45, help='seconds after the churn before the final check (>= 32, Timer J)')
    ap.add_argument('--allocator', choices=('jemalloc', 'glibc'), default='jemalloc')
    ap.add_argument('--bin', default=os.path.join(ROOT, '.build', 'release', 'presence-gateway'))
    ap.add_argument('--keep', action='store_true', help='keep the work directory (sipp statistics and errors)')
    a = ap.parse_args()
    a.minutes = max(0.5, min(a.minutes, 24 * 60))
    a.rate = max(0.1, min(a.rate, 200))
    a.oma_rate = max(0.1, min(a.oma_rate, 200))
    a.settle = max(a.settle, 33)
    for tool in ('sipp', 'kamailio', 'sqlite3'):
        if not shutil.which(tool) and not os.path.exists(f'/usr/sbin/{tool}'):
            raise SystemExit(f'{tool} not found (bash scripts/setup.sh installs the peers)')
    if not os.access(a.bin, os.X_OK):
        raise SystemExit(f'{a.bin} not found: swift build -c release --product presence-gateway')
    print(f'soak: {a.minutes:g} min of churn, {a.rate:g} enterprise + {a.oma_rate:g} OMA new watchers/s, hold {a.hold} s, '
          f'rounds of {a.round} s, {a.allocator} malloc; RSS every 10 s', flush=True)
    soak = Soak(a)
    try:
        ok = soak.run()
    finally:
        soak.stop()
        if a.keep:
            print(f'(files kept in {soak.work})')
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
