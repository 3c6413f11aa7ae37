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
# A CI log may be shown by its tail only: after a failure the issues are repeated at the end.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# At most 8 tests at once (docs/testing.md, "Tests running at once").
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=8
if swift test --skip-build 2>&1 | tee "$log"; then exit 0; fi
echo "=== test.sh: the issues recorded (from the log above) ==="
grep -E "^✘ Test .*recorded an issue" "$log" | cut -c1-400 | head -n 60
grep -E "^✘ Test run" "$log" || true
exit 1
