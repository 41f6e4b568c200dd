#!/usr/bin/env bash
# Install (if needed) and run the main job: `hcep demo`.  Extra arguments go to `hcep demo`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/deploy/install.sh"
cd "$ROOT"
exec "$ROOT/.venv/bin/hcep" demo "$@"
