#!/usr/bin/env bash
# Install (if needed), lint (ruff check and format, the import contracts, mypy) and run the whole test suite.
# Exits non-zero on any failure, including "no tests ran".
# Extra arguments go to pytest (e.g. `bash deploy/test.sh -m "not slow"`, `bash deploy/test.sh tests/app/test_cli.py`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/deploy/install.sh"
cd "$ROOT"
echo "==> ruff check" >&2
"$ROOT/.venv/bin/ruff" check .
echo "==> ruff format --check" >&2
"$ROOT/.venv/bin/ruff" format --check .
echo "==> lint-imports (the architecture contracts of pyproject.toml)" >&2
"$ROOT/.venv/bin/lint-imports"
echo "==> mypy (--strict on engine, contracts, collectors, dashboards and the service; see pyproject.toml)" >&2
"$ROOT/.venv/bin/mypy"
echo "==> pytest" >&2
# pytest exits 5 when it collected no tests; with `set -e` that fails this script, as it should.
exec "$ROOT/.venv/bin/python" -m pytest -q "$@"
