#!/usr/bin/env bash
# Installs what building and testing PresenceGateway needs on Debian 12 (as root):
# libxml2-dev and pkg-config for the XML bridge, and sip-tester (sipp 3.6) for the real-peer
# tests (Tests/PeerTests) and scripts/bench-udp.py. Swift itself is expected at /opt/swift (or on
# PATH). The package lists are refreshed only when something is missing (a CI machine starts
# clean; a developer's machine usually has everything).
set -euo pipefail
need=()
# kamailio*, sqlite3: the Kamailio presence server of Tests/EventPeerTests; sip-tester: sipp.
for pkg in libxml2-dev pkg-config kamailio kamailio-presence-modules kamailio-sqlite-modules sqlite3 sip-tester; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ "${#need[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  echo "setup: installing ${need[*]}" >&2
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! command -v sipp >/dev/null 2>&1; then
  echo "setup: sip-tester is installed but sipp is not on PATH" >&2
  exit 1
fi
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
  echo "note: add /opt/swift/usr/bin to PATH" >&2
fi
