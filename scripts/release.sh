#!/usr/bin/env bash
# Builds the Debian package of presence-gateway (README, "Installing the Debian package"):
#
#   bash scripts/release.sh [--skip-build] [--output DIR]
#
#   1. presence-gateway in release with the Swift runtime linked in (--static-swift-stdlib), so
#      the package needs no Swift toolchain: ldd must name no library under /opt/swift;
#   2. a package tree: /usr/bin/presence-gateway (stripped); the systemd unit
#      (deploy/presence-gateway.service with ExecStart in /usr/bin, the TLS credentials left to a
#      drop-in as deploy/starter.yaml says) and its jemalloc drop-in (scripts/allocator.sh,
#      docs/performance.md: 2.7 KB per bridged pair instead of 4.2 KB); the configuration
#      /etc/presence-gateway/gateway.yaml (deploy/starter.yaml, a conffile: it starts as it is, on
#      loopback); README, docs, the edge sample and the licence under /usr/share/doc; maintainer
#      scripts that reload, enable and start the service where systemd runs, and stop it on removal;
#   3. Depends: from dpkg-shlibdeps on the binary (what ldd shows, with the minimum versions its
#      symbols need), plus libjemalloc2 for the drop-in's LD_PRELOAD;
#   4. dpkg-deb --root-owner-group --build into DIR (default .build/deb).
#
# The version is GatewayVersion.version (Sources/PresenceGateway/Runtime/GatewayVersion.swift).
# --skip-build packages the binary already built. Tests/GatewayPeerTests/DebianPackageTests.swift
# installs the package and runs it (GATEWAY_DEB=path, or the newest package in .build/deb).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PATH="/opt/swift/usr/bin:$PATH"
SKIP_BUILD=0 OUTPUT="$ROOT/.build/deb"
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-build) SKIP_BUILD=1 ;;
    --output) OUTPUT="${2:?--output needs a directory}"; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "release: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
  shift
done

# Prerequisites: the build's packages (scripts/setup.sh), dpkg-dev for dpkg-shlibdeps, the toolchain.
bash scripts/setup.sh --build-only
if ! command -v dpkg-shlibdeps >/dev/null; then
  echo "release: installing dpkg-dev (dpkg-shlibdeps derives Depends)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dpkg-dev >/dev/null
fi
for tool in swift dpkg-deb dpkg-shlibdeps ldd strip md5sum; do
  command -v "$tool" >/dev/null || { echo "release: $tool is missing" >&2; exit 1; }
done
VERSION=$(sed -n 's/^ *public static let version = "\([0-9.]*\)".*/\1/p' Sources/PresenceGateway/Runtime/GatewayVersion.swift)
[ -n "$VERSION" ] || { echo "release: no version in Sources/PresenceGateway/Runtime/GatewayVersion.swift" >&2; exit 1; }
ARCH=$(dpkg --print-architecture)

BINARY="$ROOT/.build/release/presence-gateway"
if [ "$SKIP_BUILD" = 0 ]; then
  echo "== building presence-gateway $VERSION in release, Swift runtime linked in (nice -n 10)"
  START=$(date +%s)
  nice -n 10 swift build -c release --product presence-gateway --static-swift-stdlib
  echo "release: built in $(($(date +%s) - START)) s"
fi
[ -x "$BINARY" ] || { echo "release: $BINARY is not built (run without --skip-build)" >&2; exit 1; }
LIBRARIES="$(ldd "$BINARY")"
if printf '%s\n' "$LIBRARIES" | grep -q "/opt/swift\|not found"; then
  echo "release: $BINARY still needs the toolchain's libraries or misses one:" >&2
  printf '%s\n' "$LIBRARIES" >&2
  exit 1
fi
echo "== ldd: $(printf '%s\n' "$LIBRARIES" | awk '{ print $1 }' | tr '\n' ' ')"

STAGE="$(mktemp -d /tmp/presence-gateway-deb.XXXXXX)"
trap 'rm -rf "$STAGE"' EXIT
PKG="$STAGE/presence-gateway_${VERSION}_$ARCH"
DOC="$PKG/usr/share/doc/presence-gateway"
UNITS="$PKG/usr/lib/systemd/system"
install -d "$PKG/DEBIAN" "$PKG/usr/bin" "$UNITS/presence-gateway.service.d" "$PKG/etc/presence-gateway" \
  "$DOC/docs" "$DOC/examples"
install -m 0755 "$BINARY" "$PKG/usr/bin/presence-gateway"
strip --strip-unneeded "$PKG/usr/bin/presence-gateway"

# The unit: the binary where the package puts it; the TLS credentials, which the starter
# configuration does not use (a LoadCredential= of a missing file fails the start), commented out
# with where they go instead.
cat >"$STAGE/unit-header" <<'EOF'
# Installed by the presence-gateway package (scripts/release.sh): the binary at
# /usr/bin/presence-gateway, the configuration /etc/presence-gateway/gateway.yaml (a conffile that
# starts as installed, on loopback, and says how to turn on TLS), jemalloc by the drop-in
# presence-gateway.service.d/jemalloc.conf; installing enables and starts it.
EOF
sed -e 's|/usr/local/bin/presence-gateway|/usr/bin/presence-gateway|g' \
  -e '/^# Install: /,/enable --now presence-gateway$/{/^# Install: /r '"$STAGE/unit-header" -e 'd}' \
  -e 's/^\(LoadCredential=\(gateway\.pem\|gateway\.key\|enterprise-ca\.pem\):\)/#\1/' \
  -e 's|^# originals stay readable by root only.$|&\n# The package'"'"'s configuration uses no TLS: add these lines in a drop-in (systemctl edit\n# presence-gateway) once gateway.yaml names them (/etc/presence-gateway/gateway.yaml says how).|' \
  deploy/presence-gateway.service >"$UNITS/presence-gateway.service"
grep -q "^ExecStart=/usr/bin/presence-gateway " "$UNITS/presence-gateway.service" \
  && ! grep -q "^LoadCredential=gateway" "$UNITS/presence-gateway.service" \
  || { echo "release: deploy/presence-gateway.service changed; the package's unit is not right" >&2; exit 1; }
JEMALLOC_CONF=$(sed -n 's/.*MALLOC_CONF="\${MALLOC_CONF:-\([^}]*\)}".*/\1/p' scripts/allocator.sh)
cat >"$UNITS/presence-gateway.service.d/jemalloc.conf" <<EOF
# jemalloc instead of glibc's malloc: about 2.7 KB resident per bridged pair instead of 4.2 KB
# after a burst of subscription setups (docs/performance.md; scripts/allocator.sh says why).
[Service]
Environment=LD_PRELOAD=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/libjemalloc.so.2
Environment=MALLOC_CONF=${JEMALLOC_CONF:-background_thread:true,narenas:1,dirty_decay_ms:1000}
EOF
install -m 0644 deploy/starter.yaml "$PKG/etc/presence-gateway/gateway.yaml"
echo /etc/presence-gateway/gateway.yaml >"$PKG/DEBIAN/conffiles"

install -m 0644 README.md NOTICE "$DOC/"
install -m 0644 docs/*.md "$DOC/docs/"
install -m 0644 deploy/gateway.yaml "$DOC/examples/gateway-edge.yaml"
install -m 0644 deploy/kamailio-front.cfg "$DOC/examples/kamailio-front.cfg"
cat >"$DOC/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: PresenceGateway

Files: *
Copyright: 2026 The PresenceGateway authors
License: Apache-2.0
 On Debian systems the full text of the Apache License, Version 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
EOF

cat >"$PKG/DEBIAN/postinst" <<'EOF'
#!/bin/sh
# Where systemd runs: read the unit, enable it, and (re)start it on the installed configuration.
set -e
if [ "$1" = "configure" ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  systemctl enable presence-gateway.service
  systemctl restart presence-gateway.service
fi
exit 0
EOF
cat >"$PKG/DEBIAN/prerm" <<'EOF'
#!/bin/sh
# Stops the service before its files go (on removal it is also disabled).
set -e
if [ -d /run/systemd/system ]; then
  case "$1" in
    remove) systemctl disable --now presence-gateway.service || true ;;
    upgrade|deconfigure|failed-upgrade) systemctl stop presence-gateway.service || true ;;
  esac
fi
exit 0
EOF
cat >"$PKG/DEBIAN/postrm" <<'EOF'
#!/bin/sh
# After removal systemd forgets the unit; a purge also deletes the service's state directory.
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
if [ "$1" = "purge" ]; then rm -rf /var/lib/private/presence-gateway /var/lib/presence-gateway; fi
exit 0
EOF
chmod 0755 "$PKG/DEBIAN/postinst" "$PKG/DEBIAN/prerm" "$PKG/DEBIAN/postrm"

# Depends: the shared libraries the binary links (dpkg-shlibdeps reads a control file in debian/).
mkdir -p "$STAGE/debian"
printf 'Source: presence-gateway\n\nPackage: presence-gateway\nArchitecture: any\n' >"$STAGE/debian/control"
SHLIBS=$(cd "$STAGE" && dpkg-shlibdeps -O "$PKG/usr/bin/presence-gateway" 2>"$STAGE/shlibdeps.err" | sed -n 's/^shlibs:Depends=//p') \
  || { cat "$STAGE/shlibdeps.err" >&2; exit 1; }
[ -n "$SHLIBS" ] || { echo "release: dpkg-shlibdeps found no dependencies:" >&2; cat "$STAGE/shlibdeps.err" >&2; exit 1; }
DEPENDS="$SHLIBS, libjemalloc2"
(cd "$PKG" && find usr -type f -exec md5sum {} + | sort -k 2) >"$PKG/DEBIAN/md5sums"
cat >"$PKG/DEBIAN/control" <<EOF
Package: presence-gateway
Version: $VERSION
Architecture: $ARCH
Maintainer: The PresenceGateway authors <presence-gateway@example.org>
Installed-Size: $(du -sk --exclude=DEBIAN "$PKG" | cut -f1)
Depends: $DEPENDS
Section: net
Priority: optional
Homepage: https://example.org/presence-gateway
Description: SIP presence gateway between Microsoft enhanced presence and SIMPLE
 PresenceGateway is a stateful back-to-back user agent at the federation edge
 that lets Microsoft enhanced presence ([MS-PRES]: categories, batched category
 SUBSCRIBE, BENOTIFY, SERVICE publishes) and SIMPLE presence as OMA/IMS domains
 run it (PIDF, RPID, CIPID, RFC 3856, RFC 3903, RFC 6665) see each other.
 .
 The service runs under systemd with a dynamic user; the configuration is
 /etc/presence-gateway/gateway.yaml, which starts as installed on loopback.
EOF

mkdir -p "$OUTPUT"
DEB="$OUTPUT/presence-gateway_${VERSION}_$ARCH.deb"
dpkg-deb --root-owner-group --build "$PKG" "$DEB" >/dev/null
echo "== $DEB: $(du -k "$DEB" | cut -f1) KB, installed $(du -sk --exclude=DEBIAN "$PKG" | cut -f1) KB"
echo "Depends: $DEPENDS"
dpkg-deb --contents "$DEB" | awk '{ print "   " $1, $6 }'
