# Sourced by scripts/run.sh for --with-peers (after scripts/lib/demo.sh and demo_ports): starts
# Kamailio as the OMA presence server, the stand-in enhanced presence server as the enterprise and
# the gateway between them, all on 127.0.0.1; shows presence crossing each way with what each side
# sees; then keeps running until Ctrl-C, which stops everything. Needs GATEWAY_BIN, BIN_DIR,
# GATEWAY_ARGS (more presence-gateway options).
STANDIN_BIN="$BIN_DIR/presence-server-standin"
[ -x "$STANDIN_BIN" ] || { echo "run: $STANDIN_BIN is not built (swift build --product presence-server-standin)" >&2; exit 1; }
demo_require sipp kamailio sqlite3
demo_check_free "$GW_OMA_PORT" "$GW_ENT_PORT" "$EDGE_PORT" "$PUBLISH_PORT" "$EWATCHER_PORT" "$OWATCHER_PORT" \
  "$KAM_SIP_PORT" "$ADMIN_PORT"
# The peers run on the system's malloc; the gateway alone on jemalloc (scripts/allocator.sh).
GW_PRELOAD="${LD_PRELOAD:-}"
unset LD_PRELOAD
WORK="$(mktemp -d /tmp/presence-run.XXXXXX)"
export KAM_RUNDIR="$WORK/kamailio" KAM_PORT=$KAM_SIP_PORT KAM_GATEWAY="sip:127.0.0.1:$GW_OMA_PORT"
demo_config "$GATEWAY_BIN" "$WORK/gateway.yaml" "$WORK/state"
SIPP_COMMON=(-i 127.0.0.1 -nostdin -trace_msg -trace_err -timeout 60s -timeout_error)
GW_PID="" STANDIN_PID="" WATCHER_PID=""

peers_cleanup() {
  set +e
  trap - INT TERM
  echo "== stopping: the gateway (final NOTIFYs, unsubscribes), the stand-in server, Kamailio"
  demo_stop_gateway
  for pid in "$WATCHER_PID" "$STANDIN_PID"; do
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" 2>/dev/null; fi
  done
  Peers/kamailio/run-kamailio.sh stop >/dev/null 2>&1
  echo "stopped; logs in $WORK"
}
trap peers_cleanup EXIT
trap 'exit 0' INT TERM

echo "== work directory (logs, sipp traces): $WORK"
echo "== Kamailio, the OMA presence server of oma.example: 127.0.0.1:$KAM_SIP_PORT (UDP, TCP)"
Peers/kamailio/run-kamailio.sh start -A WITH_BODYLOG
echo "== the stand-in enterprise presence server of contoso.com: 127.0.0.1:$EDGE_PORT (TCP)"
"$STANDIN_BIN" "$EDGE_PORT" 2 >"$WORK/standin.log" 2>&1 &
STANDIN_PID=$!
for _ in $(seq 1 100); do grep -q LISTENING "$WORK/standin.log" && break; sleep 0.1; done
grep -q LISTENING "$WORK/standin.log" || { echo "run: the stand-in server did not start:" >&2; cat "$WORK/standin.log" >&2; exit 1; }
echo "== presence-gateway: OMA side 127.0.0.1:$GW_OMA_PORT, enterprise side 127.0.0.1:$GW_ENT_PORT," \
  "metrics and health http://127.0.0.1:$ADMIN_PORT ($WORK/gateway.yaml, log $WORK/gateway.log)"
LD_PRELOAD="$GW_PRELOAD" demo_start_gateway "$GATEWAY_BIN" "$WORK/gateway.yaml" "$WORK/gateway.log" --log-level info \
  "${GATEWAY_ARGS[@]}"
mkdir -p "$WORK/publish" "$WORK/ewatcher" "$WORK/owatcher" "$WORK/service"

echo
echo "== OMA -> enterprise: carol@oma.example PUBLISHes \"away\" (PIDF + RPID) at Kamailio"
( cd "$WORK/publish" && sipp "127.0.0.1:$KAM_SIP_PORT" -sf "$ROOT/Peers/sipp/oma-publish.xml" -p "$PUBLISH_PORT" -m 1 \
    -key user carol -key activity away -key note "Back at three" "${SIPP_COMMON[@]}" >screen.out 2>&1 ) \
  || { echo "run: Kamailio did not take the PUBLISH:" >&2; tail -20 "$WORK/publish/screen.out" >&2; exit 1; }
echo "-- Kamailio answered the PUBLISH 200; alice@contoso.com, an enterprise watcher, subscribes to carol" \
  "(batched category SUBSCRIBE to the gateway)"
( cd "$WORK/ewatcher" && sipp "127.0.0.1:$GW_ENT_PORT" -sf "$ROOT/Peers/sipp/enterprise-watcher.xml" -t t1 -p "$EWATCHER_PORT" \
    -m 1 -d 0 -key watcher sip:alice@contoso.com -key resource sip:carol@oma.example "${SIPP_COMMON[@]}" >screen.out 2>&1 ) \
  || { echo "run: the enterprise watcher failed:" >&2; tail -20 "$WORK/ewatcher/screen.out" >&2; exit 1; }
SEEN="$(demo_received "$WORK"/ewatcher/*_messages.log '^(SIP/2.0 200|BENOTIFY)' 1)"
echo "-- the categories alice received (piggybacked in the 200):"
printf '%s\n' "$SEEN" | sed -n '/<categories/,/<\/categories>/p' | sed -n '1,60p'
AVAILABILITY=$(printf '%s\n' "$SEEN" | grep -o '<availability>[0-9]*</availability>' | head -1 | tr -dc '0-9')
NOTE=$(printf '%s\n' "$SEEN" | grep -o '<body[^>]*>[^<]*</body>' | head -1 | sed 's/<[^>]*>//g')
echo "OMA -> enterprise: carol published away at Kamailio; the enterprise watcher sees availability ${AVAILABILITY:-none}, note \"${NOTE}\""

echo
echo "== enterprise -> OMA: dave@oma.example subscribes to bob@contoso.com through Kamailio"
( cd "$WORK/owatcher" && exec sipp "127.0.0.1:$KAM_SIP_PORT" -sf "$ROOT/Peers/sipp/watcher.xml" -p "$OWATCHER_PORT" -m 1 -d 500 \
    -key watcher sip:dave@oma.example -key resource sip:bob@contoso.com -key accept application/pidf+xml \
    -key event presence -set notifies 2 "${SIPP_COMMON[@]}" >screen.out 2>&1 ) &
WATCHER_PID=$!
sleep 2
echo "-- bob publishes \"busy\" at the stand-in server (SERVICE, userState availability 6500, a note)"
( cd "$WORK/service" && sipp "127.0.0.1:$EDGE_PORT" -sf "$ROOT/Peers/sipp/enterprise-publish.xml" -t t1 -p "$PUBLISH_PORT" -m 1 \
    -key user bob -key avail 6500 -key note "In a meeting" "${SIPP_COMMON[@]}" >screen.out 2>&1 ) \
  || { echo "run: the stand-in server did not take the SERVICE:" >&2; tail -20 "$WORK/service/screen.out" >&2; exit 1; }
wait "$WATCHER_PID" || { echo "run: the OMA watcher failed:" >&2; tail -20 "$WORK/owatcher/screen.out" >&2; exit 1; }
WATCHER_PID=""
SEEN="$(demo_received "$WORK"/owatcher/*_messages.log '^NOTIFY' 2)"
echo "-- the PIDF dave received through Kamailio (before and after bob's publication):"
printf '%s\n' "$SEEN" | grep -E '^NOTIFY|^Subscription-State|^[[:space:]]*<' | sed -n '1,80p'
LAST="$(printf '%s\n' "$SEEN" | awk '/^NOTIFY/ { doc = "" } { doc = doc $0 } END { printf "%s", doc }')"
BASIC=$(printf '%s' "$LAST" | grep -o '<[a-z:]*basic>[a-z]*</' | head -1 | sed 's/<[^>]*>//; s/<\/$//')
ACTIVITIES=$(printf '%s' "$LAST" | grep -o '<[a-z]*:\?activities[^>]*>.*</[a-z]*:\?activities>' | grep -o '<[a-z]*:\?[a-z-]*[[:space:]]*/>' \
  | sed 's/^<[a-z]*://; s/^<//; s/[[:space:]]*\/>$//' | tr '\n' ' ' | sed 's/ $//')
echo "enterprise -> OMA: bob published 6500 (busy) at the enterprise server; the OMA watcher at Kamailio sees basic ${BASIC:-none}, activities ${ACTIVITIES:-none}"

echo
echo "== running (gateway pid $GW_PID); Ctrl-C stops everything"
while kill -0 "$GW_PID" 2>/dev/null; do sleep 1; done
echo "run: the gateway stopped by itself; its log: $WORK/gateway.log" >&2
exit 1
