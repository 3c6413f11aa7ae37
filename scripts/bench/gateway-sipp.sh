#!/usr/bin/env bash
# The gateway's mapped NOTIFY relay benchmark with sipp on loopback (docs/performance.md): builds the
# release presence-gateway, then runs scripts/bench/gateway-sipp.py (both directions; options are
# passed through, e.g. --pairs 2000 --rates 1000,2000,4000 --dur 10 --cpu 0 --sipp-cpu 1).
# A benchmark, not a test: CI does not run it. Everything stays on 127.0.0.1 and is bounded.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
command -v sipp >/dev/null || { echo "sipp not found (apt-get install sip-tester)" >&2; exit 1; }
swift build -c release --product presence-gateway >&2
exec python3 scripts/bench/gateway-sipp.py "$@"
