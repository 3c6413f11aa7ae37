#!/bin/bash
# Starts / stops the OCS front end SIPE logs in through (kamailio-ocs-front.cfg beside this
# script) on loopback, by pid file, for the SIPE harness (Tests/GatewayPeerTests/SIPEClientTests
# and run-sipe.py).
#
#   run-front.sh start
#   run-front.sh stop
#
# Chosen by the caller (environment):
#   FRONT_RUNDIR   run directory: pid file, kamailio.cfg, front.log (required)
#   FRONT_PORT     TCP port on 127.0.0.1 (required)
#   FRONT_GATEWAY  the gateway's enterprise TCP listener, e.g. sip:127.0.0.1:5061;transport=tcp
#   FRONT_BUDDY    the buddy in the roaming contact list, without sip: (SIPE adds it; default bob@oma.example)
#   FRONT_SERVER   optional: an enhanced presence server (TCP), e.g. sip:127.0.0.1:5062;transport=tcp,
#                  which SIPE's SERVICE publications and the gateway's category SUBSCRIBEs (From
#                  another domain than contoso.com) are relayed to; unset, SERVICE is answered 200 here
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ACTION="${1:-}"
RUNDIR="${FRONT_RUNDIR:?FRONT_RUNDIR}"
PIDFILE="$RUNDIR/kamailio.pid"
LOG="$RUNDIR/front.log"

running() { [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

case "$ACTION" in
start)
  PORT="${FRONT_PORT:?FRONT_PORT}"
  GATEWAY="${FRONT_GATEWAY:?FRONT_GATEWAY}"
  BUDDY="${FRONT_BUDDY:-bob@oma.example}"
  if running; then echo "already running, pid $(cat "$PIDFILE")"; exit 0; fi
  command -v kamailio >/dev/null || { echo "kamailio not installed (bash scripts/setup.sh installs it)" >&2; exit 1; }
  mkdir -p "$RUNDIR"
  rm -f "$PIDFILE" "$LOG"
  sed "s/127\.0\.0\.1:5090/127.0.0.1:$PORT/g" "$HERE/kamailio-ocs-front.cfg" > "$RUNDIR/kamailio.cfg"
  ARGS=(-A "GATEWAY=\"$GATEWAY\"" -A "BUDDY=\"$BUDDY\"")
  if [ -n "${FRONT_SERVER:-}" ]; then ARGS+=(-A "SERVER=\"$FRONT_SERVER\""); fi
  kamailio -c -f "$RUNDIR/kamailio.cfg" "${ARGS[@]}" >"$RUNDIR/check.log" 2>&1 || {
    echo "config check failed:" >&2; cat "$RUNDIR/check.log" >&2; exit 1; }
  # -DD: foreground (children still forked), -E: log to stderr; setsid: its own process group.
  setsid kamailio -f "$RUNDIR/kamailio.cfg" -DD -E -P "$PIDFILE" -m 32 -M 8 "${ARGS[@]}" >"$LOG" 2>&1 < /dev/null &
  for _ in $(seq 1 100); do
    if running && ss -lnt 2>/dev/null | grep -q "127.0.0.1:$PORT "; then break; fi
    sleep 0.1
  done
  if ! running; then echo "front failed to start; log:" >&2; tail -30 "$LOG" >&2; exit 1; fi
  echo "OCS front (kamailio) pid $(cat "$PIDFILE") on 127.0.0.1:$PORT (tcp), gateway $GATEWAY${FRONT_SERVER:+, server $FRONT_SERVER}, log $LOG"
  ;;
stop)
  if ! running; then echo "not running"; rm -f "$PIDFILE"; exit 0; fi
  PID="$(cat "$PIDFILE")"
  kill -TERM "$PID"
  for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID"; fi
  sleep 0.3
  LEFT=$(pgrep -g "$PID" 2>/dev/null || true)
  if [ -n "$LEFT" ]; then kill -KILL $LEFT 2>/dev/null || true; fi
  rm -f "$PIDFILE"
  echo "stopped front ($PID)"
  ;;
*)
  sed -n '2,17p' "$0"; exit 2 ;;
esac
