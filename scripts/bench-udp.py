#!/usr/bin/env python3
"""Loopback UDP throughput of the SIP stack: sipp sends OPTIONS at increasing rates.

usage: scripts/bench-udp.py [--rates 1000,2000,...] [--dur 15] [--bin PATH] [--cpu LIST]

Build first: swift build -c release --product sip-bench

For each rate R: a fresh `sip-bench serve --port 0` (release build; the stack's UDP transport
and transaction layer answering 200 OK) on 127.0.0.1, and sipp as UAC
(Tests/PeerTests/Scenarios/uac-options.xml, retransmitting after 500 ms) launching R calls/s
for at most DUR seconds (-m R*DUR, hard -timeout DUR+5 s, per-call receive timeout 5 s, and a
wall-clock kill at DUR+30 s). A step is clean when fewer than 1 % of the calls failed and at
least 99 % completed. Prints one row per step (sipp's retransmissions, the server's absorbed
retransmissions) and the highest clean rate; stops at the first step that is not clean. Only
127.0.0.1 is ever addressed; DUR is capped at 20 s per step (docs/performance.md). `--cpu 0` pins the
server to core 0 with taskset (sipp then gets the other core).
"""
import argparse, csv, os, signal, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIO = os.path.join(ROOT, 'Tests', 'PeerTests', 'Scenarios', 'uac-options.xml')


def last_stats(path):
    with open(path) as f:
        rows = list(csv.reader(f, delimiter=';'))
    head, last = rows[0], rows[-1]
    col = {name: i for i, name in enumerate(head)}
    return int(last[col['SuccessfulCall(C)']]), int(last[col['FailedCall(C)']]), int(last[col['Retransmissions(C)']])


def step(binary, rate, dur, cpu):
    work_dir = tempfile.TemporaryDirectory()
    work = work_dir.name
    server_err = open(os.path.join(work, 'serve.err'), 'w+')
    command = [binary, 'serve', '--host', '127.0.0.1', '--port', '0']
    if cpu:
        command = ['taskset', '-c', cpu] + command
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=server_err, text=True)
    absorbed = '?'
    try:
        ready = server.stdout.readline()
        if not ready.startswith('listening on 127.0.0.1:'):
            raise SystemExit(f'sip-bench serve did not start: {ready!r}')
        port = int(ready.strip().rsplit(':', 1)[1])
        stat = os.path.join(work, 'stat.csv')
        calls = rate * dur
        t0 = time.monotonic()
        try:
            rc = subprocess.run(
                ['sipp', f'127.0.0.1:{port}', '-sf', SCENARIO, '-i', '127.0.0.1', '-t', 'u1',
                 '-r', str(rate), '-m', str(calls), '-timeout', f'{dur + 5}s', '-recv_timeout', '5000',
                 '-trace_stat', '-stf', stat, '-fd', '1', '-nostdin'],
                cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=dur + 30).returncode
        except subprocess.TimeoutExpired:
            rc = -1  # killed by the wall-clock bound; the stats written so far still count
        elapsed = time.monotonic() - t0
        ok, failed, retrans = last_stats(stat)
        return calls, ok, failed, retrans, elapsed, rc
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server_err.seek(0)
        for line in server_err.read().splitlines():
            if 'absorbed' in line:
                absorbed = line.split('absorbed ')[1].split()[0]
        server_err.close()
        work_dir.cleanup()
        step.absorbed = absorbed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--rates', default='1000,2000,4000,6000,8000,10000,12000,16000')
    ap.add_argument('--dur', type=int, default=15)
    ap.add_argument('--cpu', default='', help='taskset core list for the server, e.g. 0')
    ap.add_argument('--bin', default=os.path.join(ROOT, '.build', 'release', 'sip-bench'))
    a = ap.parse_args()
    dur = min(a.dur, 20)
    best = 0
    if not os.access(a.bin, os.X_OK):
        raise SystemExit(f'{a.bin} not found: swift build -c release --product sip-bench')
    print(f'{"rate/s":>8} {"calls":>7} {"ok":>7} {"failed":>7} {"retrans":>8} {"retr%":>6} {"absorbed":>8} {"secs":>6}  clean')
    for rate in map(int, a.rates.split(',')):
        calls, ok, failed, retrans, secs, rc = step(a.bin, rate, dur, a.cpu)
        clean = failed < 0.01 * calls and ok >= 0.99 * calls
        # sipp retransmits after 500 ms without an answer: many retransmissions mean answers
        # arrive late (a "storm" above 10 % of the calls), even when few calls fail.
        storm = retrans > 0.10 * calls
        verdict = ('yes' if clean else 'no') + (' (retransmission storm)' if storm else '')
        print(f'{rate:>8} {calls:>7} {ok:>7} {failed:>7} {retrans:>8} {100.0 * retrans / calls:>5.1f}% {step.absorbed:>8} {secs:>6.1f}  {verdict}', flush=True)
        if clean:
            best = rate
        else:
            break
    print(f'highest clean rate (< 1 % failed): {best} OPTIONS/s')


if __name__ == '__main__':
    main()
