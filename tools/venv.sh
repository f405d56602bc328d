#!/usr/bin/env bash
# Creates the Python virtual environment that tools and tests use
# (pyannote.metrics for the DER parity test), with the pinned versions of
# tools/venv-requirements.txt, from PyPI, with the python3 on PATH.
# Idempotent: does nothing when the venv already holds those pins.
#
#   bash tools/venv.sh [VENV_DIR]     (default: <repo>/.venv)
#
# scripts/test.sh runs it and passes DIARIZATION_VENV=<repo>/.venv to tests.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv}"
REQUIREMENTS="$ROOT/tools/venv-requirements.txt"
PYTHON="${PYTHON:-python3}"

# The Python client's pinned wheels (clients/python/wheelhouse.txt), for its
# tests to build and install it offline into fresh venvs.
client_wheels() {
  local list="$ROOT/clients/python/wheelhouse.txt" dir="$VENV/wheelhouse"
  local sum
  sum="$(sha256sum "$list" | cut -d' ' -f1)"
  [[ -f "$dir/.sha256" && "$(cat "$dir/.sha256")" == "$sum" ]] && return 0
  rm -rf "$dir"
  "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check \
    --no-deps --only-binary=:all: -d "$dir" -r "$list"
  echo "$sum" > "$dir/.sha256"
}

want="$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)"
stamp="$VENV/.requirements.sha256"
if [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] &&
   "$VENV/bin/python" -c "import pyannote.metrics" 2>/dev/null; then
  client_wheels
  echo "venv up to date: $VENV"
  exit 0
fi

"$PYTHON" - <<'PY'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"tools/venv.sh needs Python >= 3.10 (pyannote.metrics 4.2), "
             f"found {sys.version.split()[0]}")
PY

echo "creating venv $VENV with $("$PYTHON" --version)"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r "$REQUIREMENTS"
"$VENV/bin/python" - <<'PY'
import importlib.metadata as metadata
version = metadata.version("pyannote.metrics")
assert version == "4.2.0", f"pyannote.metrics {version} installed, 4.2.0 pinned"
print(f"pyannote.metrics {version} ready")
PY
echo "$want" > "$stamp"
client_wheels
