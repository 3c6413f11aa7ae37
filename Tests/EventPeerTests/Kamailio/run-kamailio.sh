#!/bin/bash
# Start / stop a throw-away Kamailio on loopback, by pid file.
# Copied from shared/peers/run-kamailio.sh (the project's peer kit) for Tests/EventPeerTests;
# changed: KAM_PORT chooses the port (the config is rewritten into $KAM_RUNDIR), and only the
# presence role is kept.
#
#   ./run-kamailio.sh start [presence|forwarder] [extra kamailio args...]
#   ./run-kamailio.sh stop  [presence|forwarder]
#   ./run-kamailio.sh status [presence|forwarder]
#
# presence  : kamailio-presence.cfg  on 127.0.0.1:5070 (UDP+TCP), SQLite DB
#             created fresh from /usr/share/kamailio/db_sqlite/*.sql
# forwarder : kamailio-forwarder.cfg on 127.0.0.1:5080, t_relay to 127.0.0.1:5090
#
# State lives in $KAM_RUNDIR (default /tmp/kamailio-<role>): pid file,
# presence.db, ctl socket, kamailio.log.  Extra args are passed to kamailio,
# e.g.  ./run-kamailio.sh start presence -A WITH_BODYLOG
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ACTION="${1:-}"; shift || true
ROLE="${1:-presence}"; [ $# -gt 0 ] && shift
case "$ROLE" in
  presence)  CFG="$HERE/kamailio-presence.cfg";  PORT="${KAM_PORT:-5070}" ;;
  *) echo "unknown role $ROLE" >&2; exit 2 ;;
esac
RUNDIR="${KAM_RUNDIR:-/tmp/kamailio-$ROLE}"
PIDFILE="$RUNDIR/kamailio.pid"
LOG="$RUNDIR/kamailio.log"
DB="$RUNDIR/presence.db"
SQLDIR=/usr/share/kamailio/db_sqlite
SHM_MB="${KAM_SHM_MB:-256}"
PKG_MB="${KAM_PKG_MB:-16}"

running() { [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

case "$ACTION" in
start)
  if running; then echo "already running, pid $(cat "$PIDFILE")"; exit 0; fi
  mkdir -p "$RUNDIR"
  rm -f "$PIDFILE" "$LOG" "$RUNDIR/kamailio_ctl"
  ARGS=()
  sed "s/127\.0\.0\.1:5070/127.0.0.1:$PORT/g" "$CFG" > "$RUNDIR/kamailio.cfg"
  CFG="$RUNDIR/kamailio.cfg"
  if [ "$ROLE" = presence ]; then
    rm -f "$DB" "$DB"-journal "$DB"-wal "$DB"-shm
    # schema shipped by kamailio-sqlite-modules: version table first
    cat "$SQLDIR/standard-create.sql" "$SQLDIR/presence-create.sql" | sqlite3 "$DB"
    # journal mode is persistent in the file; WAL lets readers run while a
    # writer commits (KAM_JOURNAL=DELETE for SQLite's default)
    sqlite3 "$DB" "PRAGMA journal_mode=${KAM_JOURNAL:-WAL};" >/dev/null
    ARGS+=(-A "DBURL=\"sqlite://$DB\"")
  fi
  ARGS+=(-A "CTLSOCK=\"unix:$RUNDIR/kamailio_ctl\"")
  kamailio -c -f "$CFG" "${ARGS[@]}" "$@" >"$RUNDIR/check.log" 2>&1 || {
    echo "config check failed:" >&2; cat "$RUNDIR/check.log" >&2; exit 1; }
  # -DD: stay in foreground (children still forked), -E: log to stderr.
  # setsid so that the whole kamailio process group is ours and separable.
  setsid kamailio -f "$CFG" -DD -E -P "$PIDFILE" -m "$SHM_MB" -M "$PKG_MB" \
      "${ARGS[@]}" "$@" >"$LOG" 2>&1 < /dev/null &
  echo $! > "$RUNDIR/launcher.pid"
  for _ in $(seq 1 50); do
    if running && grep -q ":$PORT " <(ss -lnu 2>/dev/null; ss -lnt 2>/dev/null); then break; fi
    sleep 0.1
  done
  if ! running; then echo "kamailio failed to start; log:" >&2; tail -30 "$LOG" >&2; exit 1; fi
  echo "kamailio ($ROLE) pid $(cat "$PIDFILE"), rundir $RUNDIR, log $LOG"
  ;;
stop)
  if ! running; then echo "not running"; rm -f "$PIDFILE"; exit 0; fi
  PID="$(cat "$PIDFILE")"
  kill -TERM "$PID"
  for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$PID" 2>/dev/null; then echo "still alive, SIGKILL $PID"; kill -KILL "$PID"; fi
  # kamailio's main process takes its children down with it; verify
  sleep 0.3
  LEFT=$(pgrep -g "$PID" 2>/dev/null || true)
  if [ -n "$LEFT" ]; then echo "killing leftover children: $LEFT"; kill -KILL $LEFT 2>/dev/null || true; fi
  rm -f "$PIDFILE"
  echo "stopped $ROLE ($PID)"
  ;;
status)
  if running; then echo "running pid $(cat "$PIDFILE")"; else echo "not running"; exit 1; fi
  ;;
*)
  sed -n '2,14p' "$0"; exit 2 ;;
esac
