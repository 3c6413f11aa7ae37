#!/usr/bin/env bash
# The README walkthrough (issue 5 §4): the gateway on its embedded default configuration between
# Kamailio as the OMA presence server and sipp as the enterprise side, all on 127.0.0.1, showing a
# presence change crossing in each direction; everything is stopped at the end.
#
#   1. Kamailio (Peers/kamailio/oma-domain.cfg) on 127.0.0.1:5070: presence server of oma.example,
#      relaying requests for contoso.com to the gateway's OMA side (127.0.0.1:5060), record-routed.
#   2. sipp as the enterprise edge on 127.0.0.1:5062 (TCP, Peers/sipp/enterprise-edge.xml): answers
#      the gateway's category SUBSCRIBEs with availability 3500 (online), then after 3 s sends a
#      BENOTIFY with 15500 (away).
#   3. presence-gateway with no --config (OMA UDP/TCP 5060 -> Kamailio 5070; enterprise TCP 5061 ->
#      edge 5062; metrics and health on 127.0.0.1:9090).
#   4. OMA -> enterprise: carol@oma.example PUBLISHes "busy" to Kamailio; an enterprise client
#      (sipp, TCP to 5061) sends a batched category SUBSCRIBE for carol and receives her state as
#      categories (availability 6500).
#   5. enterprise -> OMA: dave@oma.example SUBSCRIBEs to bob@contoso.com through Kamailio and
#      receives PIDF: open, then open + away when the enterprise state changes to 15500.
#
# Needs the ports 5060-5062, 5070 and 9090 free. Logs and sipp traces stay in the printed directory.
# Usage: bash scripts/walkthrough.sh   (builds presence-gateway in debug first)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PATH="/opt/swift/usr/bin:$PATH"
for tool in sipp kamailio sqlite3; do
  command -v "$tool" >/dev/null || { echo "walkthrough: $tool is missing; run: bash scripts/setup.sh" >&2; exit 1; }
done
for port in 5060 5061 5062 5070 9090; do
  if ss -Hln "sport = :$port" 2>/dev/null | grep -q .; then
    echo "walkthrough: port $port on this machine is in use; stop what uses it first" >&2; exit 1
  fi
done
echo "== building presence-gateway (debug; quick when up to date)"
swift build --product presence-gateway 2>&1 | tail -1
GATEWAY_BIN="$ROOT/.build/debug/presence-gateway"
WORK="$(mktemp -d /tmp/presence-walkthrough.XXXXXX)"
export KAM_RUNDIR="$WORK/kamailio" KAM_PORT=5070 KAM_GATEWAY="sip:127.0.0.1:5060"
SIPP_COMMON=(-i 127.0.0.1 -nostdin -trace_msg -trace_err -timeout 60s -timeout_error)
GW_PID="" EDGE_PID=""

cleanup() {
  set +e
  if [ -n "$GW_PID" ] && kill -0 "$GW_PID" 2>/dev/null; then kill -TERM "$GW_PID"; wait "$GW_PID" 2>/dev/null; fi
  if [ -n "$EDGE_PID" ] && kill -0 "$EDGE_PID" 2>/dev/null; then kill -TERM "$EDGE_PID"; wait "$EDGE_PID" 2>/dev/null; fi
  Peers/kamailio/run-kamailio.sh stop >/dev/null 2>&1
}
trap cleanup EXIT

# Prints the first $3 messages sipp received (from its -trace_msg file) whose first line matches $2.
received() {
  awk -v want="$2" -v limit="$3" '
    /^----------------/ { if (keep && shown < limit) { printf "%s", block; shown++ } block = ""; keep = 0; inmsg = 0; next }
    /message received/ { inmsg = 1; first = 1; next }
    inmsg && first && NF { first = 0; if ($0 ~ want) keep = 1 }
    inmsg { sub(/\r$/, ""); block = block $0 "\n" }
    END { if (keep && shown < limit) printf "%s", block }' "$1"
}

echo "== work directory: $WORK"
echo "== 1. Kamailio as the OMA presence server (127.0.0.1:5070)"
Peers/kamailio/run-kamailio.sh start -A WITH_BODYLOG

echo "== 2. sipp as the enterprise edge (127.0.0.1:5062, TCP)"
mkdir -p "$WORK/edge"
( cd "$WORK/edge" && exec sipp -sf "$ROOT/Peers/sipp/enterprise-edge.xml" -t t1 -p 5062 -m 2 -d 3000 \
    -key avail1 3500 -key avail2 15500 -key expires 3600 "${SIPP_COMMON[@]}" -timeout 120s >screen.out 2>&1 ) &
EDGE_PID=$!
sleep 1

echo "== 3. presence-gateway on its default configuration"
"$GATEWAY_BIN" --log-level info >"$WORK/gateway.log" 2>&1 &
GW_PID=$!
for _ in $(seq 1 100); do
  ss -Hlnt "sport = :5061" 2>/dev/null | grep -q . && break
  kill -0 "$GW_PID" 2>/dev/null || { echo "the gateway stopped:"; cat "$WORK/gateway.log"; exit 1; }
  sleep 0.2
done
sleep 0.5
if command -v curl >/dev/null; then echo "health: $(curl -fs http://127.0.0.1:9090/health)"; fi

echo
echo "== 4. OMA -> enterprise: carol@oma.example publishes busy to Kamailio"
mkdir -p "$WORK/publish" "$WORK/ewatcher" "$WORK/owatcher"
( cd "$WORK/publish" && sipp 127.0.0.1:5070 -sf "$ROOT/Peers/sipp/oma-publish.xml" -p 5063 -m 1 \
    -key user carol -key activity busy -key note "In a call" "${SIPP_COMMON[@]}" >screen.out 2>&1 )
echo "PUBLISH answered 200 by Kamailio"
echo "-- the enterprise client subscribes to carol (batched category SUBSCRIBE over TCP to 5061)"
( cd "$WORK/ewatcher" && sipp 127.0.0.1:5061 -sf "$ROOT/Peers/sipp/enterprise-watcher.xml" -t t1 -p 5064 -m 1 -d 0 \
    -key watcher sip:alice@contoso.com -key resource sip:carol@oma.example "${SIPP_COMMON[@]}" >screen.out 2>&1 ) \
  || { echo "enterprise watcher failed:"; tail -20 "$WORK/ewatcher/screen.out"; cat "$WORK"/ewatcher/*errors.log 2>/dev/null | tail -20; exit 1; }
echo "-- what the enterprise client received: the 200 with the first notification piggybacked (6500 = busy)"
received "$WORK"/ewatcher/*_messages.log '^(SIP/2.0 200|BENOTIFY)' 1 | grep -v '^\(Via\|Contact\|Content-Length\|Server\|User-Agent\):' 

echo
echo "== 5. enterprise -> OMA: dave@oma.example subscribes to bob@contoso.com through Kamailio"
( cd "$WORK/owatcher" && sipp 127.0.0.1:5070 -sf "$ROOT/Peers/sipp/watcher.xml" -p 5065 -m 1 -d 500 \
    -key watcher sip:dave@oma.example -key resource sip:bob@contoso.com -key accept application/pidf+xml \
    -set notifies 2 "${SIPP_COMMON[@]}" >screen.out 2>&1 ) \
  || { echo "OMA watcher failed:"; tail -20 "$WORK/owatcher/screen.out"; cat "$WORK"/owatcher/*errors.log 2>/dev/null | tail -20; exit 1; }
echo "-- the NOTIFYs dave received (through Kamailio): 3500 -> open, then 15500 -> open + away"
received "$WORK"/owatcher/*_messages.log '^NOTIFY' 2 | grep -v '^\(Via\|Contact\|Content-Length\|Max-Forwards\|Record-Route\):' 

echo
echo "== 6. stopping: the gateway (SIGTERM: final NOTIFYs, unsubscribes), sipp, Kamailio"
kill -TERM "$GW_PID"; wait "$GW_PID" 2>/dev/null || true; GW_PID=""
for _ in $(seq 1 50); do kill -0 "$EDGE_PID" 2>/dev/null || break; sleep 0.2; done
if kill -0 "$EDGE_PID" 2>/dev/null; then kill -TERM "$EDGE_PID"; fi
wait "$EDGE_PID" 2>/dev/null || true; EDGE_PID=""
Peers/kamailio/run-kamailio.sh stop
echo "-- Kamailio also received the linked identity's PUBLISHes (alice@contoso.com -> alice@oma.example):"
grep -a "BODYLOG PUBLISH.*alice@oma.example" "$KAM_RUNDIR/kamailio.log" | sed 's/^.*BODYLOG /   /' || true
echo "walkthrough done; logs in $WORK"
