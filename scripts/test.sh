#!/usr/bin/env bash
# Sets up and runs every test of PresenceGateway.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="/opt/swift/usr/bin:$PATH"
# Sources are formatted and linted by .swift-format (120 columns, no force unwrap, docs/testing.md,
# "Style check"): any finding fails the run; `swift-format format -i -r -p Sources` fixes layout.
command -v swift-format >/dev/null || { echo "test.sh: swift-format not found (it comes with Swift)" >&2; exit 1; }
if ! swift-format lint --strict -r -p Sources; then
  echo "test.sh: swift-format findings in Sources (above)" >&2
  exit 1
fi
swift build --build-tests
swift test --skip-build
