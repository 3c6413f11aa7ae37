#!/usr/bin/env bash
# Sets up and runs every test of PresenceGateway.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="/opt/swift/usr/bin:$PATH"
swift build --build-tests
swift test --skip-build
