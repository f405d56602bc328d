#!/usr/bin/env bash
# The runner of the live reference tests of engine/pipeline: a Python script
# draws fresh random problems, asks the reference library (scikit-learn,
# scipy) for its answer and compares ours, from a C++ binary.
#
#   live_reference_test.sh SCRIPT BINARY MODULES PREFIX COUNT
# SCRIPT and BINARY are runfiles paths under engine/pipeline/; MODULES
# (comma-separated) must import in the venv of tools/venv.sh
# (DIARIZATION_VENV, else <repo>/.venv), and missing them is a failure, not a
# skip. ${PREFIX}_PROBLEMS and ${PREFIX}_SEED override the count (COUNT) and
# the seed (fresh).
set -euo pipefail
script=$1 binary=$2 modules=$3 prefix=$4 count=$5

RUNFILES="${TEST_SRCDIR:?run under bazel test}/diarization"
REPO="$(dirname "$(readlink -f "$RUNFILES/WORKSPACE")")"
VENV="${DIARIZATION_VENV:-$REPO/.venv}"
if [[ ! -x "$VENV/bin/python" ]] ||
   ! "$VENV/bin/python" -c "import $modules" 2>/dev/null; then
  echo "FAIL: no venv with $modules at $VENV; run 'bash tools/venv.sh'" \
       "(or set DIARIZATION_VENV)"
  exit 1
fi
problems_var=${prefix}_PROBLEMS seed_var=${prefix}_SEED
seed=()
[[ -n "${!seed_var:-}" ]] && seed=(--seed "${!seed_var}")
# Passive OpenMP waits: scikit-learn's two-thread problems do not spin on a
# busy host.
export OMP_WAIT_POLICY=PASSIVE
exec "$VENV/bin/python" "$RUNFILES/engine/pipeline/$script" \
  --binary "$RUNFILES/engine/pipeline/$binary" \
  --work-dir "${TEST_TMPDIR:?}" \
  --problems "${!problems_var:-$count}" "${seed[@]}"
