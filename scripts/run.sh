#!/usr/bin/env bash
# Sets up, builds and runs the main job. Until the gateway exists this is
# presence-map converting a golden vector (an [MS-PRES] 4.4.3 category
# BENOTIFY body) to RFC PIDF, with the mapping report on standard error.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="/opt/swift/usr/bin:$PATH"
swift build -c release --product presence-map
exec .build/release/presence-map convert --to pidf --report "${@:-Vectors/presence/examples/input/4.4.3-category-benotify-calendarState.xml}"
