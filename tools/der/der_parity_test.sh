#!/usr/bin/env bash
# //tools/der:der_parity_test — our DER tool against pyannote.metrics, live.
# Needs the venv of tools/venv.sh (DIARIZATION_VENV, else <repo>/.venv) and
# the golden data (DIARIZATION_TEST_DATA, else <repo>/../shared/data).
# Missing either is a failure, not a skip.
set -euo pipefail

RUNFILES="${TEST_SRCDIR:?run under bazel test}/diarization"
# The WORKSPACE runfile links to the source tree: its folder is the repo.
REPO="$(dirname "$(readlink -f "$RUNFILES/WORKSPACE")")"
VENV="${DIARIZATION_VENV:-$REPO/.venv}"
DATA="${DIARIZATION_TEST_DATA:-$(dirname "$REPO")/shared/data}"

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "FAIL: no Python venv at $VENV; run 'bash tools/venv.sh' (or set" \
       "DIARIZATION_VENV)"
  exit 1
fi
if ! "$VENV/bin/python" -c "import pyannote.metrics" 2>/dev/null; then
  echo "FAIL: pyannote.metrics is not installed in $VENV; run" \
       "'bash tools/venv.sh'"
  exit 1
fi
if [[ ! -d "$DATA/findit-dia-parity" ]]; then
  echo "FAIL: golden data not found at $DATA (set DIARIZATION_TEST_DATA)"
  exit 1
fi

exec "$VENV/bin/python" "$RUNFILES/tools/der/der_parity.py" \
  --der-binary "$RUNFILES/tools/der/der" \
  --data-dir "$DATA" \
  --work-dir "${TEST_TMPDIR:?}" \
  --random-pairs "${DER_PARITY_RANDOM_PAIRS:-40}"
