#!/usr/bin/env bash
# //engine/pipeline:kmeans_sklearn_parity_test — our KMeans against
# scikit-learn's, live, on fresh random problems (kmeans_sklearn_parity.py).
# Needs the venv of tools/venv.sh (DIARIZATION_VENV, else <repo>/.venv);
# missing it is a failure, not a skip. KMEANS_PARITY_PROBLEMS and
# KMEANS_PARITY_SEED override the count (1000) and the seed (fresh).
set -euo pipefail

RUNFILES="${TEST_SRCDIR:?run under bazel test}/diarization"
REPO="$(dirname "$(readlink -f "$RUNFILES/WORKSPACE")")"
VENV="${DIARIZATION_VENV:-$REPO/.venv}"
if [[ ! -x "$VENV/bin/python" ]] ||
   ! "$VENV/bin/python" -c "import sklearn, threadpoolctl" 2>/dev/null; then
  echo "FAIL: no venv with scikit-learn at $VENV; run 'bash tools/venv.sh'" \
       "(or set DIARIZATION_VENV)"
  exit 1
fi
seed=()
[[ -n "${KMEANS_PARITY_SEED:-}" ]] && seed=(--seed "$KMEANS_PARITY_SEED")
# Passive OpenMP waits: the two-thread problems do not spin on a busy host.
export OMP_WAIT_POLICY=PASSIVE
exec "$VENV/bin/python" "$RUNFILES/engine/pipeline/kmeans_sklearn_parity.py" \
  --binary "$RUNFILES/engine/pipeline/kmeans_problems" \
  --work-dir "${TEST_TMPDIR:?}" \
  --problems "${KMEANS_PARITY_PROBLEMS:-1000}" "${seed[@]}"
