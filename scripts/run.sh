#!/usr/bin/env bash
# Sets up, builds and runs the main job: the gateway on its embedded loopback demo
# configuration (OMA side UDP/TCP 127.0.0.1:5060, enterprise side TCP 127.0.0.1:5061,
# metrics and health on http://127.0.0.1:9090). Extra arguments go to presence-gateway,
# e.g. `scripts/run.sh --config gateway.yaml`. Stop it with Ctrl-C (graceful).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --build-only
export PATH="/opt/swift/usr/bin:$PATH"
swift build -c release --product presence-gateway
# jemalloc (Debian's libjemalloc2, installed by setup.sh) instead of glibc's malloc: a burst of
# subscription setups leaves each answered UDP transaction alive 32 s (RFC 3261 Timer J), and
# glibc keeps the holes they leave between the long-lived subscription state (5.4 KB resident per
# bridged pair after 100,000 setups, against 3.6 KB with jemalloc: scripts/bench/gateway-sipp.sh).
jemalloc=$(ldconfig -p | awk '/libjemalloc\.so\.2 / {print $NF; exit}')
if [ -n "$jemalloc" ]; then
  export LD_PRELOAD="$jemalloc" MALLOC_CONF="${MALLOC_CONF:-background_thread:true}"
fi
exec .build/release/presence-gateway "$@"
