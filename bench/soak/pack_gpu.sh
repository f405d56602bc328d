#!/usr/bin/env bash
# Packs what the GPU soak needs into .device/soak.tar.xz (ignored by git):
# diarization_server_cuda, soak_client, make_random_models, the shared
# libraries the GPU machine lacks (tools/device/stage_binaries.sh), the PLDA
# and two recordings. On the GPU machine:
#
#   carry [".device/soak.tar.xz"], command "bash bench/soak/gpu_run.sh"
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
OUTPUT_BASE=${OUTPUT_BASE:-/tmp/bazel-runtime}
DATA=${DIARIZATION_TEST_DATA:-$ROOT/../shared/data}
PLDA=${PLDA_DIR:-$ROOT/../shared/models/community-1-plda}
TARGETS=(
  //server:diarization_server_cuda
  //bench/soak:soak_client
  //tools/make_random_models:make_random_models
)
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  bazel --output_base="$OUTPUT_BASE" build "${TARGETS[@]}" >&2
fi
BIN=$(bazel --output_base="$OUTPUT_BASE" info bazel-bin 2>/dev/null)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/data" "$STAGE/plda"
source tools/device/stage_binaries.sh
stage_binaries "$BIN" "$STAGE" "${TARGETS[@]}"
cp "$DATA/pyannote-audio/sample/sample.wav" "$STAGE/data/sample.wav"
cp "$DATA/findit-dia-parity/05_four_speaker/clip_16k.wav" "$STAGE/data/four_speaker.wav"
cp "$PLDA/xvec_transform.npz" "$PLDA/plda.npz" "$STAGE/plda/"
mkdir -p .device
rm -f .device/soak.tar.xz
tar -C "$STAGE" -cf - bin lib data plda | xz -T2 -6 >.device/soak.tar.xz
ls -la .device/soak.tar.xz
