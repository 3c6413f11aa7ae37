#!/usr/bin/env bash
# Installs what building and testing PresenceGateway needs on Debian 12 (as root):
# libxml2-dev and pkg-config for the XML bridge, libjemalloc2 for the gateway's allocator (scripts/run.sh);
# unless --build-only, also the real peers of the
# tests: sip-tester (sipp 3.6) for Tests/PeerTests, Tests/EventPeerTests, Tests/GatewayPeerTests,
# scripts/walkthrough.sh and scripts/bench-udp.py, and Kamailio with its presence and SQLite modules
# (plus sqlite3) for Tests/EventPeerTests, Tests/GatewayPeerTests and scripts/walkthrough.sh (the
# kamailio package's sipcapture module is the HEP collector of Tests/GatewayPeerTests, and
# xcap_server over xhttp its XCAP server); the
# real OMA user agents linphone-cli (linphonec 5.1) and baresip-core (baresip 1.0) for
# Tests/GatewayPeerTests/RealUserAgentTests.swift; systemd for systemd-analyze, which checks
# deploy/presence-gateway.service (DeploymentTests); and chromium, the headless browser that
# renders the admin status page (Tests/GatewayPeerTests/StatusPageBrowserTests.swift); and
# SIPE (pidgin-sipe, the [MS-PRES] client) run headless in bitlbee-libpurple, with gcc to build
# Peers/sipe/sax1-shim.c, for Tests/GatewayPeerTests/SIPEClientTests.swift; and
# PostgreSQL 15, whose initdb and pg_ctl start the private clusters of the shared-state tests
# (Tests/PeerTestSupport/PostgresCluster.swift); no cluster of its own is created or started;
# dnsmasq-base (the dnsmasq binary, no service), the DNS server whose answers fill the gateway's
# resolver cache in Tests/GatewayPeerTests/RuntimeControlProcessTests.swift; and prometheus for
# promtool, which checks deploy/prometheus's alert rules, runs their unit tests and lints the
# gateway's /metrics (Tests/GatewayPeerTests/MonitoringProcessTests.swift); and apache2, whose httpd
# with mod_auth_digest and mod_proxy_http is the OMA Aggregation Proxy (HTTP Digest in front of
# Kamailio's xcap_server) of Tests/GatewayPeerTests/XCAPAuthPeerTests.swift; and python3 with
# python3-venv for async-upnp-client (below), the UPnP control point of Tests/UPnPDeviceTests; and
# gupnp-tools, whose gssdp-discover finds the UPnP device by multicast in a network namespace
# (iproute2's ip gives loopback the MULTICAST flag there; SSDPDiscoveryProcessTests).
# With --with-peers (scripts/run.sh --with-peers): what building needs and the demo's peers only,
# sip-tester, Kamailio with its presence and SQLite modules, and sqlite3.
# Swift itself is expected at /opt/swift (or on PATH). The package lists are refreshed only when
# something is missing (a CI machine starts clean; a developer's machine usually has everything).
set -euo pipefail
packages=(libxml2-dev pkg-config libjemalloc2)
# What the Swift toolchain itself needs to compile and link on a minimal Debian 12 image (its
# linker, the C and C++ runtimes' headers, git for the package dependencies, libpython3 for its
# debugger, libz3 for the compiler's constraint solver): a full image has them, a minimal one not.
packages+=(binutils git libc6-dev libedit2 libgcc-12-dev libpython3-dev libsqlite3-0 libstdc++-12-dev libz3-dev tzdata zlib1g-dev)
if [ "${1:-}" = "--with-peers" ]; then
  packages+=(sip-tester kamailio kamailio-presence-modules kamailio-sqlite-modules sqlite3)
elif [ "${1:-}" != "--build-only" ]; then
  packages+=(sip-tester kamailio kamailio-presence-modules kamailio-sqlite-modules kamailio-tls-modules sqlite3 linphone-cli baresip-core systemd chromium postgresql
    pidgin-sipe bitlbee-libpurple gcc prometheus dnsmasq-base apache2 python3 python3-venv gupnp-tools iproute2)
fi
need=()
for pkg in "${packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ "${#need[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  # Debian's postgresql would create and start a cluster on port 5432; the tests start their own.
  mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/presence-gateway.conf
  echo "setup: installing ${need[*]}" >&2
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# Debian's kamailio package enables and starts its own service on *:5060; the tests and the demo
# start their own Kamailio, and scripts/run.sh needs 5060: stop and disable it where systemd runs.
if [ -d /run/systemd/system ] && systemctl is-enabled --quiet kamailio 2>/dev/null; then
  echo "setup: stopping and disabling the kamailio service the package started (tests start their own)" >&2
  systemctl disable --now kamailio >/dev/null 2>&1 || true
fi
# Likewise Debian's prometheus package enables and starts a Prometheus server on *:9090 (the
# gateway's admin port in scripts/run.sh); the tests need only its promtool.
if [ -d /run/systemd/system ] && systemctl is-enabled --quiet prometheus 2>/dev/null; then
  echo "setup: stopping and disabling the prometheus service the package started (only promtool is used)" >&2
  systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
# And Debian's apache2 starts httpd on *:80; the tests start their own on a free loopback port.
if [ -d /run/systemd/system ] && systemctl is-enabled --quiet apache2 2>/dev/null; then
  echo "setup: stopping and disabling the apache2 service the package started (the tests start their own)" >&2
  systemctl disable --now apache2 >/dev/null 2>&1 || true
fi
# async-upnp-client 0.49.0 from PyPI, the UPnP control point of Tests/UPnPDeviceTests
# (AsyncUPnPClientPeerTests), in a virtual environment of Debian's python3 outside the work tree, where the
# test looks for it (UPNP_PEER_VENV overrides the place); made again only when the import fails.
if [ -z "${1:-}" ]; then
  venv="${UPNP_PEER_VENV:-/opt/presence-gateway-peers/async-upnp-client-0.49.0}"
  if ! "$venv/bin/python" -c 'import async_upnp_client.aiohttp' >/dev/null 2>&1; then
    echo "setup: installing async-upnp-client 0.49.0 into $venv" >&2
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check async-upnp-client==0.49.0
  fi
fi
if [ "${1:-}" != "--build-only" ] && ! command -v promtool >/dev/null 2>&1; then
  echo "setup: prometheus is installed but promtool is not on PATH" >&2
  exit 1
fi
if [ "${1:-}" != "--build-only" ] && ! command -v sipp >/dev/null 2>&1; then
  echo "setup: sip-tester is installed but sipp is not on PATH" >&2
  exit 1
fi
if [ -z "${1:-}" ] && ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "setup: systemd is installed but systemd-analyze is not on PATH" >&2
  exit 1
fi
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
  echo "note: add /opt/swift/usr/bin to PATH" >&2
fi
