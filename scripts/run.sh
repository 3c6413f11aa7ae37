#!/usr/bin/env bash
# Sets up, builds and runs the main job: the gateway on its embedded loopback demo configuration
# (OMA side UDP/TCP 127.0.0.1:5060, enterprise side TCP 127.0.0.1:5061, metrics and health on
# http://127.0.0.1:9460), on jemalloc (scripts/allocator.sh), until Ctrl-C (graceful).
#
# With --with-peers it also starts the two presence worlds, on 127.0.0.1: Kamailio as the OMA
# presence server of oma.example (Peers/kamailio) and the project's stand-in enhanced presence
# server (presence-server-standin) as the enterprise behind the edge; then it shows presence
# crossing each way and what each side sees, and keeps everything running until Ctrl-C:
#   OMA -> enterprise: carol@oma.example PUBLISHes "away" at Kamailio; an enterprise watcher
#     (sipp, a batched category SUBSCRIBE to the gateway) receives her categories.
#   enterprise -> OMA: bob@contoso.com publishes "busy" (SERVICE, 6500) at the stand-in server;
#     dave@oma.example subscribes to bob through Kamailio and receives PIDF.
# The ports, the configuration and the peers are shared with scripts/walkthrough.sh
# (scripts/lib/demo.sh). Other arguments go to presence-gateway, e.g. `--config gateway.yaml`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
DEMO_NAME=run
source scripts/lib/demo.sh

usage() {
  cat <<'USAGE'
Usage: bash scripts/run.sh [--with-peers] [--ports BASE | --sip-port N --admin-port N] [--bin-dir DIR]
                           [PRESENCE-GATEWAY OPTIONS...]
  --with-peers    also run Kamailio (OMA presence server) and the stand-in enterprise presence
                  server, show presence crossing both ways, and keep running until Ctrl-C
  --sip-port N    the gateway's OMA side N (UDP+TCP), enterprise side N+1 (TCP); with peers the
                  enterprise server N+2, sipp clients N+3..N+5, Kamailio N+10 (default 5060)
  --admin-port N  metrics and health (default 9460)
  --ports BASE    --sip-port BASE --admin-port BASE+20
  --bin-dir DIR   run the programs already built in DIR (e.g. .build/debug) instead of building
                  in release
Other options go to presence-gateway (`presence-gateway --help`), e.g. --config FILE (then the
port options do not apply), --log-level debug.
USAGE
}

WITH_PEERS=0 SIP_PORT=5060 ADMIN=9460 BIN_DIR="" PORTS_SET=0 GATEWAY_ARGS=() CONFIG_GIVEN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --with-peers) WITH_PEERS=1 ;;
    --ports) SIP_PORT="${2:?--ports needs a number}"; ADMIN=$(( ${2//[!0-9]/0} + 20 )); PORTS_SET=1; shift ;;
    --sip-port) SIP_PORT="${2:?--sip-port needs a number}"; PORTS_SET=1; shift ;;
    --admin-port) ADMIN="${2:?--admin-port needs a number}"; PORTS_SET=1; shift ;;
    --bin-dir) BIN_DIR="${2:?--bin-dir needs a directory}"; shift ;;
    -h|--help) usage; exit 0 ;;
    --config|--config=*) CONFIG_GIVEN=1; GATEWAY_ARGS+=("$1") ;;
    *) GATEWAY_ARGS+=("$1") ;;
  esac
  shift
done
if [ "$CONFIG_GIVEN" = 1 ] && { [ "$WITH_PEERS" = 1 ] || [ "$PORTS_SET" = 1 ]; }; then
  echo "run: --config runs that file as it is; --with-peers and the port options need the embedded configuration" >&2
  exit 2
fi
demo_ports "$SIP_PORT" "$ADMIN"

if [ "$WITH_PEERS" = 1 ]; then bash scripts/setup.sh --with-peers; else bash scripts/setup.sh --build-only; fi
if [ -n "$BIN_DIR" ]; then
  BIN_DIR="$(cd "$BIN_DIR" && pwd)"
else
  export PATH="/opt/swift/usr/bin:$PATH"
  command -v swift >/dev/null || { echo "run: swift is missing (expected at /opt/swift/usr/bin)" >&2; exit 1; }
  swift build -c release --product presence-gateway
  if [ "$WITH_PEERS" = 1 ]; then swift build -c release --product presence-server-standin; fi
  BIN_DIR="$ROOT/.build/release"
fi
GATEWAY_BIN="$BIN_DIR/presence-gateway"
[ -x "$GATEWAY_BIN" ] || { echo "run: $GATEWAY_BIN is not built" >&2; exit 1; }
source scripts/allocator.sh

if [ "$CONFIG_GIVEN" = 1 ]; then exec "$GATEWAY_BIN" "${GATEWAY_ARGS[@]}"; fi
if [ "$WITH_PEERS" = 0 ]; then
  demo_check_free "$GW_OMA_PORT" "$GW_ENT_PORT" "$ADMIN_PORT"
  CONFIG="$(mktemp /tmp/presence-gateway-run.XXXXXX.yaml)"
  # The embedded configuration with the chosen ports; its store stays in ./state (docs/state.md).
  demo_config "$GATEWAY_BIN" "$CONFIG"
  exec "$GATEWAY_BIN" --config "$CONFIG" "${GATEWAY_ARGS[@]}"
fi
source scripts/lib/with-peers.sh
