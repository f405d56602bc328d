#!/usr/bin/env bash
# Packs what the service-overhead benchmark needs on the GPU machine into
# .device/service-overhead.tar.xz (ignored by git): engine_direct_cuda,
# diarization_server_cuda, diarize_client, make_random_models, the shared
# libraries that machine lacks (see tools/device/pack.sh), the PLDA and a few
# golden recordings. On the device tool:
#
#   carry [".device/service-overhead.tar.xz"],
#   command "bash bench/service_overhead/gpu_run.sh"
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
OUTPUT_BASE=${OUTPUT_BASE:-/tmp/bazel-runtime}
DATA=${DIARIZATION_TEST_DATA:-$ROOT/../shared/data}
PLDA=${PLDA_DIR:-$ROOT/../shared/models/community-1-plda}
TARGETS=(
  //bench/service_overhead:engine_direct_cuda
  //server:diarization_server_cuda
  //clients:diarize_client
  //tools/make_random_models:make_random_models
)
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  bazel --output_base="$OUTPUT_BASE" build "${TARGETS[@]}" >&2
fi
BIN=$(bazel --output_base="$OUTPUT_BASE" info bazel-bin 2>/dev/null)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/data" "$STAGE/plda"
# Binaries, and the shared libraries the GPU machine lacks.
source tools/device/stage_binaries.sh
stage_binaries "$BIN" "$STAGE" "${TARGETS[@]}"
cp "$DATA/pyannote-audio/sample/sample.wav" "$STAGE/data/sample.wav"
cp "$DATA/findit-dia-parity/05_four_speaker/clip_16k.wav" "$STAGE/data/four_speaker.wav"
cp "$PLDA/xvec_transform.npz" "$PLDA/plda.npz" "$STAGE/plda/"
mkdir -p .device
rm -f .device/service-overhead.tar.xz
tar -C "$STAGE" -cf - bin lib data plda | xz -T2 -6 >.device/service-overhead.tar.xz
ls -la .device/service-overhead.tar.xz
