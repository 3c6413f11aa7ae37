# Sourced by scripts/run.sh and scripts/walkthrough.sh: what the demo with peers and the
# walkthrough share. Everything is on 127.0.0.1; the ports follow one base (README, "The two
# commands"; docs/testing.md, "Walkthrough"):
#
#   BASE     the gateway's OMA side (UDP and TCP)     BASE+1   its enterprise side (TCP)
#   BASE+2   the enterprise edge (sipp or the stand-in presence server, TCP)
#   BASE+3.. BASE+5  sipp clients (an OMA publisher, an enterprise watcher, an OMA watcher)
#   BASE+10  Kamailio, the OMA presence server (UDP and TCP)
#   ADMIN    metrics and health (HTTP)

# Sets the port variables from a base and an admin port, after checking they are numbers in range.
demo_ports() {
  local base="$1" admin="$2"
  case "$base$admin" in '' | *[!0-9]*) echo "$DEMO_NAME: ports must be numbers" >&2; exit 2 ;; esac
  if [ "$base" -lt 1024 ] || [ "$base" -gt 65500 ]; then echo "$DEMO_NAME: the SIP base port must be 1024-65500" >&2; exit 2; fi
  if [ "$admin" -lt 1024 ] || [ "$admin" -gt 65535 ]; then echo "$DEMO_NAME: the admin port must be 1024-65535" >&2; exit 2; fi
  GW_OMA_PORT=$base GW_ENT_PORT=$((base + 1)) EDGE_PORT=$((base + 2)) KAM_SIP_PORT=$((base + 10))
  PUBLISH_PORT=$((base + 3)) EWATCHER_PORT=$((base + 4)) OWATCHER_PORT=$((base + 5)) ADMIN_PORT=$admin
}

# Checks that nothing listens on the given ports (TCP or UDP, any address); for each one taken,
# says what holds it (`ss -ltnup`) and how to move, then exits 1.
demo_check_free() {
  local port taken=0 holders
  for port in "$@"; do
    holders=$(ss -Hltnup "sport = :$port" 2>/dev/null || true)
    if [ -n "$holders" ]; then
      echo "$DEMO_NAME: port $port is taken; held by:" >&2
      printf '%s\n' "$holders" | awk '{ printf "    %s %s %s\n", $1, $5, $7 }' >&2
      taken=1
    fi
  done
  if [ "$taken" = 1 ]; then
    echo "$DEMO_NAME: stop what holds it, or choose other ports (--help)" >&2
    exit 1
  fi
}

# Writes the embedded configuration of $1 (a presence-gateway binary) with the chosen ports to
# $2. With $3 (a directory) the store goes there and SIGTERM ends every dialog (a demo that
# leaves nothing behind; docs/state.md, "Shutdown"); without it the store stays where the
# embedded configuration keeps it.
demo_config() {
  local binary="$1" output="$2" state="${3:-}"
  local state_edits=()
  if [ -n "$state" ]; then
    state_edits=(-e "s|path: state/presence-gateway.db|path: $state/presence-gateway.db|" -e "s/^shutdown: keep/shutdown: terminate/")
  fi
  "$binary" --print-default-config | sed \
    -e "s/port: 5060 }/port: $GW_OMA_PORT }/g" -e "s/port: 5061 }/port: $GW_ENT_PORT }/" \
    -e "s/127\.0\.0\.1:5062/127.0.0.1:$EDGE_PORT/" -e "s/127\.0\.0\.1:5070/127.0.0.1:$KAM_SIP_PORT/" \
    -e "s/port: 5070, side: oma/port: $KAM_SIP_PORT, side: oma/" -e "s/port: 9460 }/port: $ADMIN_PORT }/" \
    "${state_edits[@]}" >"$output"
  if ! grep -q "port: $ADMIN_PORT }" "$output" || ! grep -q "port: $GW_ENT_PORT }" "$output" \
    || { [ -n "$state" ] && ! grep -q "^shutdown: terminate" "$output"; }; then
    echo "$DEMO_NAME: the embedded configuration changed; $output does not have the chosen ports" >&2
    exit 1
  fi
  "$binary" --config "$output" --check >/dev/null
}

# Starts the gateway ($1) on the configuration $2, output into $3, and waits until its enterprise
# listener accepts; sets GW_PID. Extra arguments go to the gateway.
demo_start_gateway() {
  local binary="$1" config="$2" log="$3"
  shift 3
  "$binary" --config "$config" "$@" >"$log" 2>&1 &
  GW_PID=$!
  for _ in $(seq 1 150); do
    ss -Hlnt "sport = :$GW_ENT_PORT" 2>/dev/null | grep -q . && return 0
    kill -0 "$GW_PID" 2>/dev/null || { echo "$DEMO_NAME: the gateway stopped:" >&2; cat "$log" >&2; GW_PID=""; exit 1; }
    sleep 0.2
  done
  echo "$DEMO_NAME: the gateway did not listen on $GW_ENT_PORT within 30 s; its log: $log" >&2
  exit 1
}

# Stops the gateway (SIGTERM: final NOTIFYs and unsubscribes) and waits for it.
demo_stop_gateway() {
  if [ -n "${GW_PID:-}" ] && kill -0 "$GW_PID" 2>/dev/null; then kill -TERM "$GW_PID"; wait "$GW_PID" 2>/dev/null || true; fi
  GW_PID=""
}

# Prints the first $3 messages sipp received (from its -trace_msg file $1) whose first line matches $2.
demo_received() {
  awk -v want="$2" -v limit="$3" '
    /^----------------/ { if (keep && shown < limit) { printf "%s", block; shown++ } block = ""; keep = 0; inmsg = 0; next }
    /message received/ { inmsg = 1; first = 1; next }
    inmsg && first && NF { first = 0; if ($0 ~ want) keep = 1 }
    inmsg { sub(/\r$/, ""); block = block $0 "\n" }
    END { if (keep && shown < limit) printf "%s", block }' "$1"
}

# Checks that the tools named are on PATH, else names what installs them.
demo_require() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$DEMO_NAME: $tool is missing; run: bash scripts/setup.sh --with-peers" >&2; exit 1; }
  done
}
