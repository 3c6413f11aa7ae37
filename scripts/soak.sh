#!/usr/bin/env bash
# Soak test (README, "Fuzzing and soak"): builds the release presence-gateway, then runs
# scripts/soak.py for MINUTES (default 30) of bounded subscribe/notify/refresh/unsubscribe churn
# over UDP on 127.0.0.1, with Kamailio as the OMA domain and sipp as the enterprise edge and the
# watchers of both sides. Prints the gateway's RSS every 10 s, and at the end checks /health and
# /metrics (no subscription and no transaction left after the 32 s Timer J linger). Exit status
# 0 when that holds. Options after MINUTES go to soak.py (--rate, --oma-rate, --hold, --keep...).
# It measures memory, not speed: `nice -n 19 scripts/soak.sh` is fine on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
MINUTES=${1:-30}
shift || true
command -v sipp >/dev/null || { echo "sipp not found (bash scripts/setup.sh installs it)" >&2; exit 1; }
if [ "${SOAK_NO_BUILD:-0}" != 1 ]; then
    swift build -c release --product presence-gateway >&2
fi
exec python3 scripts/soak.py --minutes "$MINUTES" "$@"
