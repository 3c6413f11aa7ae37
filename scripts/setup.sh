#!/usr/bin/env bash
# Installs what building and testing PresenceGateway needs on Debian 12 (as root).
# Swift itself is expected at /opt/swift (or on PATH).
set -euo pipefail
need=()
# kamailio*, sqlite3: the Kamailio presence server of Tests/EventPeerTests; sip-tester: sipp.
for pkg in libxml2-dev pkg-config kamailio kamailio-presence-modules kamailio-sqlite-modules sqlite3 sip-tester; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ "${#need[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
  echo "note: add /opt/swift/usr/bin to PATH" >&2
fi
