#!/usr/bin/env bash
# Install (if needed) and run the main job: `hcep demo`, the live system (Ctrl-C stops it).  Extra arguments go to
# `hcep demo` (e.g. `--duration 300`, `--replay`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/deploy/install.sh"
cd "$ROOT"
exec "$ROOT/.venv/bin/hcep" demo "$@"
