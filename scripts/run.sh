#!/usr/bin/env bash
# Sets up, builds and runs the main job: the gateway on its embedded loopback demo
# configuration (OMA side UDP/TCP 127.0.0.1:5060, enterprise side TCP 127.0.0.1:5061,
# metrics and health on http://127.0.0.1:9090). Extra arguments go to presence-gateway,
# e.g. `scripts/run.sh --config gateway.yaml`. Stop it with Ctrl-C (graceful).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --build-only
export PATH="/opt/swift/usr/bin:$PATH"
swift build -c release --product presence-gateway
source scripts/allocator.sh
exec .build/release/presence-gateway "$@"
