#!/usr/bin/env bash
# The README walkthrough: the gateway on its embedded default configuration between
# Kamailio as the OMA presence server and sipp as the enterprise side, all on 127.0.0.1, showing a
# presence change crossing in each direction; everything is stopped at the end.
#
#   1. Kamailio (Peers/kamailio/oma-domain.cfg) on 127.0.0.1:5070: presence server of oma.example,
#      relaying requests for contoso.com to the gateway's OMA side (127.0.0.1:5060), record-routed.
#   2. sipp as the enterprise edge on 127.0.0.1:5062 (TCP, Peers/sipp/enterprise-edge.xml): answers
#      the gateway's category SUBSCRIBEs with availability 3500 (online), then after 3 s sends a
#      BENOTIFY with 15500 (away).
#   3. presence-gateway on its embedded configuration, ports as chosen (OMA UDP/TCP 5060 -> Kamailio
#      5070; enterprise TCP 5061 -> edge 5062; metrics and health on 127.0.0.1:9460).
#   4. OMA -> enterprise: carol@oma.example PUBLISHes "busy" to Kamailio; an enterprise client
#      (sipp, TCP to 5061) sends a batched category SUBSCRIBE for carol and receives her state as
#      categories (availability 6500).
#   5. enterprise -> OMA: dave@oma.example SUBSCRIBEs to bob@contoso.com through Kamailio and
#      receives PIDF: open, then open + away when the enterprise state changes to 15500.
#
# The ports above are the defaults; --port-base moves them all (see usage). Every port used must be
# free. Logs and sipp traces stay in the printed directory. What this shares with
# `scripts/run.sh --with-peers` (ports, configuration, Kamailio, reading sipp's traces) is in
# scripts/lib/demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PATH="/opt/swift/usr/bin:$PATH"
DEMO_NAME=walkthrough
source scripts/lib/demo.sh

usage() {
  cat <<'USAGE'
Usage: bash scripts/walkthrough.sh [--release] [--port-base N] [--admin-port N]
  --release      build and run the release gateway (default: debug, quick when up to date)
  --port-base N  gateway OMA side N (UDP+TCP), enterprise side N+1 (TCP), enterprise edge (sipp) N+2,
                 sipp clients N+3..N+5, Kamailio N+10 (default 5060: 5060-5065 and 5070)
  --admin-port N metrics and health (default 9460)
USAGE
}
CONFIGURATION=debug BASE=5060 ADMIN_PORT=9460
while [ $# -gt 0 ]; do
  case "$1" in
    --release) CONFIGURATION=release ;;
    --port-base) BASE="${2:?--port-base needs a number}"; shift ;;
    --admin-port) ADMIN_PORT="${2:?--admin-port needs a number}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "walkthrough: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
demo_ports "$BASE" "$ADMIN_PORT"
demo_require sipp kamailio sqlite3
demo_check_free $GW_OMA_PORT $GW_ENT_PORT $EDGE_PORT $PUBLISH_PORT $EWATCHER_PORT $OWATCHER_PORT $KAM_SIP_PORT $ADMIN_PORT
echo "== building presence-gateway ($CONFIGURATION; quick when up to date)"
swift build -c "$CONFIGURATION" --product presence-gateway 2>&1 | tail -1
GATEWAY_BIN="$ROOT/.build/$CONFIGURATION/presence-gateway"
WORK="$(mktemp -d /tmp/presence-walkthrough.XXXXXX)"
export KAM_RUNDIR="$WORK/kamailio" KAM_PORT=$KAM_SIP_PORT KAM_GATEWAY="sip:127.0.0.1:$GW_OMA_PORT"
# The embedded configuration with the chosen ports, its store in $WORK (scripts/lib/demo.sh).
demo_config "$GATEWAY_BIN" "$WORK/gateway.yaml" "$WORK/state"
SIPP_COMMON=(-i 127.0.0.1 -nostdin -trace_msg -trace_err -timeout 60s -timeout_error)
GW_PID="" EDGE_PID=""

cleanup() {
  set +e
  demo_stop_gateway
  if [ -n "$EDGE_PID" ] && kill -0 "$EDGE_PID" 2>/dev/null; then kill -TERM "$EDGE_PID"; wait "$EDGE_PID" 2>/dev/null; fi
  Peers/kamailio/run-kamailio.sh stop >/dev/null 2>&1
}
trap cleanup EXIT

echo "== work directory: $WORK"
echo "== 1. Kamailio as the OMA presence server (127.0.0.1:$KAM_SIP_PORT)"
Peers/kamailio/run-kamailio.sh start -A WITH_BODYLOG

echo "== 2. sipp as the enterprise edge (127.0.0.1:$EDGE_PORT, TCP)"
mkdir -p "$WORK/edge"
( cd "$WORK/edge" && exec sipp -sf "$ROOT/Peers/sipp/enterprise-edge.xml" -t t1 -p "$EDGE_PORT" -m 2 -d 3000 \
    -key avail1 3500 -key avail2 15500 -key expires 3600 "${SIPP_COMMON[@]}" -timeout 120s >screen.out 2>&1 ) &
EDGE_PID=$!
sleep 1

echo "== 3. presence-gateway on its default configuration (ports as chosen: $WORK/gateway.yaml)"
demo_start_gateway "$GATEWAY_BIN" "$WORK/gateway.yaml" "$WORK/gateway.log" --log-level info
sleep 0.5
if command -v curl >/dev/null; then echo "health: $(curl -fs "http://127.0.0.1:$ADMIN_PORT/health")"; fi

echo
echo "== 4. OMA -> enterprise: carol@oma.example publishes busy to Kamailio"
mkdir -p "$WORK/publish" "$WORK/ewatcher" "$WORK/owatcher"
( cd "$WORK/publish" && sipp "127.0.0.1:$KAM_SIP_PORT" -sf "$ROOT/Peers/sipp/oma-publish.xml" -p "$PUBLISH_PORT" -m 1 \
    -key user carol -key activity busy -key note "In a call" "${SIPP_COMMON[@]}" >screen.out 2>&1 )
echo "PUBLISH answered 200 by Kamailio"
echo "-- the enterprise client subscribes to carol (batched category SUBSCRIBE over TCP to $GW_ENT_PORT)"
( cd "$WORK/ewatcher" && sipp "127.0.0.1:$GW_ENT_PORT" -sf "$ROOT/Peers/sipp/enterprise-watcher.xml" -t t1 -p "$EWATCHER_PORT" -m 1 -d 0 \
    -key watcher sip:alice@contoso.com -key resource sip:carol@oma.example "${SIPP_COMMON[@]}" >screen.out 2>&1 ) \
  || { echo "enterprise watcher failed:"; tail -20 "$WORK/ewatcher/screen.out"; cat "$WORK"/ewatcher/*errors.log 2>/dev/null | tail -20; exit 1; }
echo "-- what the enterprise client received: the 200 with the first notification piggybacked (6500 = busy)"
demo_received "$WORK"/ewatcher/*_messages.log '^(SIP/2.0 200|BENOTIFY)' 1 | grep -v '^\(Via\|Contact\|Content-Length\|Server\|User-Agent\):'

echo
echo "== 5. enterprise -> OMA: dave@oma.example subscribes to bob@contoso.com through Kamailio"
( cd "$WORK/owatcher" && sipp "127.0.0.1:$KAM_SIP_PORT" -sf "$ROOT/Peers/sipp/watcher.xml" -p "$OWATCHER_PORT" -m 1 -d 500 \
    -key watcher sip:dave@oma.example -key resource sip:bob@contoso.com -key accept application/pidf+xml \
    -key event presence -set notifies 2 "${SIPP_COMMON[@]}" >screen.out 2>&1 ) \
  || { echo "OMA watcher failed:"; tail -20 "$WORK/owatcher/screen.out"; cat "$WORK"/owatcher/*errors.log 2>/dev/null | tail -20; exit 1; }
echo "-- the NOTIFYs dave received (through Kamailio): 3500 -> open, then 15500 -> open + away"
demo_received "$WORK"/owatcher/*_messages.log '^NOTIFY' 2 | grep -v '^\(Via\|Contact\|Content-Length\|Max-Forwards\|Record-Route\):'

echo
echo "== 6. stopping: the gateway (SIGTERM: final NOTIFYs, unsubscribes), sipp, Kamailio"
demo_stop_gateway
for _ in $(seq 1 50); do kill -0 "$EDGE_PID" 2>/dev/null || break; sleep 0.2; done
if kill -0 "$EDGE_PID" 2>/dev/null; then kill -TERM "$EDGE_PID"; fi
wait "$EDGE_PID" 2>/dev/null || true; EDGE_PID=""
Peers/kamailio/run-kamailio.sh stop
echo "-- Kamailio also received the linked identity's PUBLISHes (alice@contoso.com -> alice@oma.example):"
grep -a "BODYLOG PUBLISH.*alice@oma.example" "$KAM_RUNDIR/kamailio.log" | sed 's/^.*BODYLOG /   /' || true
echo "walkthrough done; logs in $WORK"
