#!/usr/bin/env python3
"""Loopback UDP throughput of the SIP stack: sipp sends OPTIONS at increasing rates.

usage: scripts/bench-udp.py [--rates 1000,2000,...] [--dur 15] [--bin PATH]

For each rate R: a fresh `sip-bench serve` (release build; the stack's UDP transport and
transaction layer answering 200 OK) on 127.0.0.1, and sipp as UAC
(Tests/PeerTests/Scenarios/uac-options.xml) launching R calls/s for at most DUR seconds
(-m R*DUR, hard -timeout DUR+5 s, per-call receive timeout 5 s). A step is clean when fewer
than 1 % of the calls failed. Prints one row per step and the highest clean rate. Only
127.0.0.1 is ever addressed; DUR is capped at 20 s per step (issue 3 §6).
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


def step(binary, rate, dur, port):
    server = subprocess.Popen([binary, 'serve', '--host', '127.0.0.1', '--port', str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        ready = server.stdout.readline()
        if 'listening' not in ready:
            raise SystemExit(f'sip-bench serve did not start: {ready!r}')
        with tempfile.TemporaryDirectory() as work:
            stat = os.path.join(work, 'stat.csv')
            calls = rate * dur
            t0 = time.monotonic()
            sipp = subprocess.run(
                ['sipp', f'127.0.0.1:{port}', '-sf', SCENARIO, '-i', '127.0.0.1', '-t', 'u1',
                 '-r', str(rate), '-m', str(calls), '-timeout', f'{dur + 5}s', '-recv_timeout', '5000',
                 '-trace_stat', '-stf', stat, '-fd', '1', '-nostdin',
                 '-max_socket', '4096'],
                cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=dur + 30)
            elapsed = time.monotonic() - t0
            ok, failed, retrans = last_stats(stat)
            return calls, ok, failed, retrans, elapsed, sipp.returncode
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--rates', default='1000,2000,4000,6000,8000,10000,12000,16000')
    ap.add_argument('--dur', type=int, default=15)
    ap.add_argument('--port', type=int, default=5092)
    ap.add_argument('--bin', default=os.path.join(ROOT, '.build', 'release', 'sip-bench'))
    a = ap.parse_args()
    dur = min(a.dur, 20)
    best = 0
    print(f'{"rate/s":>8} {"calls":>7} {"ok":>7} {"failed":>7} {"retrans":>8} {"secs":>6}  clean')
    for rate in map(int, a.rates.split(',')):
        calls, ok, failed, retrans, secs, rc = step(a.bin, rate, dur, a.port)
        clean = failed < 0.01 * calls and ok + failed >= 0.99 * calls
        print(f'{rate:>8} {calls:>7} {ok:>7} {failed:>7} {retrans:>8} {secs:>6.1f}  {"yes" if clean else "no"}', flush=True)
        if clean:
            best = rate
        else:
            break
    print(f'highest clean rate (< 1 % failed): {best} OPTIONS/s')


if __name__ == '__main__':
    main()
