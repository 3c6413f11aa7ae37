#!/bin/bash
# Starts / stops the OMA domain's Kamailio (oma-domain.cfg beside this script) on loopback, by pid
# file, for the real-peer tests (Tests/GatewayPeerTests) and scripts/walkthrough.sh.
#
#   run-kamailio.sh start [extra kamailio args...]
#   run-kamailio.sh stop
#   run-kamailio.sh status
#
# Chosen by the caller (environment):
#   KAM_RUNDIR   run directory: pid file, SQLite presence.db, ctl socket, kamailio.log
#                (default /dev/shm/kamailio-oma-$USER when /dev/shm exists: tmpfs, so SQLite
#                never waits for a disk)
#   KAM_PORT     UDP+TCP port on 127.0.0.1 (default 5070)
#   KAM_GATEWAY  the gateway's OMA listener, where requests for contoso.com go
#                (default sip:127.0.0.1:5060)
#   KAM_SHM_MB / KAM_PKG_MB  shared / private memory (default 64 / 16 MB)
# Derived from ../shared/peers/run-kamailio.sh (the project's peer kit).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ACTION="${1:-}"; shift || true
CFG="$HERE/oma-domain.cfg"
PORT="${KAM_PORT:-5070}"
GATEWAY="${KAM_GATEWAY:-sip:127.0.0.1:5060}"
if [ -d /dev/shm ]; then DEFAULT_RUNDIR="/dev/shm/kamailio-oma-$(id -un)"; else DEFAULT_RUNDIR="/tmp/kamailio-oma-$(id -un)"; fi
RUNDIR="${KAM_RUNDIR:-$DEFAULT_RUNDIR}"
PIDFILE="$RUNDIR/kamailio.pid"
LOG="$RUNDIR/kamailio.log"
DB="$RUNDIR/presence.db"
SQLDIR=/usr/share/kamailio/db_sqlite
SHM_MB="${KAM_SHM_MB:-64}"
PKG_MB="${KAM_PKG_MB:-16}"

running() { [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

case "$ACTION" in
start)
  if running; then echo "already running, pid $(cat "$PIDFILE")"; exit 0; fi
  command -v kamailio >/dev/null || { echo "kamailio not installed (bash scripts/setup.sh installs it)" >&2; exit 1; }
  command -v sqlite3 >/dev/null || { echo "sqlite3 not installed (bash scripts/setup.sh installs it)" >&2; exit 1; }
  mkdir -p "$RUNDIR"
  rm -f "$PIDFILE" "$LOG" "$RUNDIR/kamailio_ctl" "$DB" "$DB"-journal "$DB"-wal "$DB"-shm
  sed "s/127\.0\.0\.1:5070/127.0.0.1:$PORT/g" "$CFG" > "$RUNDIR/kamailio.cfg"
  CFG="$RUNDIR/kamailio.cfg"
  # the schema shipped by kamailio-sqlite-modules: version table first
  cat "$SQLDIR/standard-create.sql" "$SQLDIR/presence-create.sql" | sqlite3 "$DB"
  sqlite3 "$DB" "PRAGMA journal_mode=WAL;" >/dev/null
  ARGS=(-A "DBURL=\"sqlite://$DB\"" -A "CTLSOCK=\"unix:$RUNDIR/kamailio_ctl\"" -A "GATEWAY=\"$GATEWAY\"")
  kamailio -c -f "$CFG" "${ARGS[@]}" "$@" >"$RUNDIR/check.log" 2>&1 || {
    echo "config check failed:" >&2; cat "$RUNDIR/check.log" >&2; exit 1; }
  # -DD: foreground (children still forked), -E: log to stderr; setsid: its own process group.
  setsid kamailio -f "$CFG" -DD -E -P "$PIDFILE" -m "$SHM_MB" -M "$PKG_MB" \
      "${ARGS[@]}" "$@" >"$LOG" 2>&1 < /dev/null &
  for _ in $(seq 1 100); do
    if running && grep -q "127.0.0.1:$PORT " <(ss -lnu 2>/dev/null; ss -lnt 2>/dev/null); then break; fi
    sleep 0.1
  done
  if ! running; then echo "kamailio failed to start; log:" >&2; tail -30 "$LOG" >&2; exit 1; fi
  echo "kamailio (OMA domain) pid $(cat "$PIDFILE") on 127.0.0.1:$PORT, gateway $GATEWAY, log $LOG"
  ;;
stop)
  if ! running; then echo "not running"; rm -f "$PIDFILE"; exit 0; fi
  PID="$(cat "$PIDFILE")"
  kill -TERM "$PID"
  for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$PID" 2>/dev/null; then echo "still alive, SIGKILL $PID"; kill -KILL "$PID"; fi
  sleep 0.3
  LEFT=$(pgrep -g "$PID" 2>/dev/null || true)
  if [ -n "$LEFT" ]; then echo "killing leftover children: $LEFT"; kill -KILL $LEFT 2>/dev/null || true; fi
  rm -f "$PIDFILE"
  echo "stopped kamailio ($PID)"
  ;;
status)
  if running; then echo "running pid $(cat "$PIDFILE")"; else echo "not running"; exit 1; fi
  ;;
*)
  sed -n '2,17p' "$0"; exit 2 ;;
esac
