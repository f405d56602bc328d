#!/usr/bin/env bash
# //engine/pipeline:ahc_scipy_parity_test — our AHC against scipy's, live,
# on fresh random problems (ahc_scipy_parity.py). Needs the venv of
# tools/venv.sh (DIARIZATION_VENV, else <repo>/.venv); missing it is a
# failure, not a skip. AHC_PARITY_PROBLEMS and AHC_PARITY_SEED override the
# count (300) and the seed (fresh).
set -euo pipefail

RUNFILES="${TEST_SRCDIR:?run under bazel test}/diarization"
REPO="$(dirname "$(readlink -f "$RUNFILES/WORKSPACE")")"
VENV="${DIARIZATION_VENV:-$REPO/.venv}"
if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c "import scipy" 2>/dev/null; then
  echo "FAIL: no venv with scipy at $VENV; run 'bash tools/venv.sh'" \
       "(or set DIARIZATION_VENV)"
  exit 1
fi
seed=()
[[ -n "${AHC_PARITY_SEED:-}" ]] && seed=(--seed "$AHC_PARITY_SEED")
exec "$VENV/bin/python" "$RUNFILES/engine/pipeline/ahc_scipy_parity.py" \
  --binary "$RUNFILES/engine/pipeline/ahc_problems" \
  --work-dir "${TEST_TMPDIR:?}" \
  --problems "${AHC_PARITY_PROBLEMS:-300}" "${seed[@]}"
