#!/usr/bin/env bash
# Packs issue 13's attack tests for the GPU machine into .device/attack.tar.xz
# (ignored by git): attack_test, diarization_server_cuda, make_random_models,
# the shared libraries the GPU machine lacks (tools/device/stage_binaries.sh)
# and the PLDA. On the GPU machine:
#
#   carry [".device/attack.tar.xz"], command "bash tests/attack_test_gpu_run.sh"
#
# OUTPUT_BASE: a Bazel output base for the build (default: this checkout's).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PLDA=${PLDA_DIR:-$ROOT/../shared/models/community-1-plda}
BAZEL=(bazel)
[[ -n "${OUTPUT_BASE:-}" ]] && BAZEL=(bazel --output_base="$OUTPUT_BASE")
TARGETS=(
  //server:diarization_server_cuda
  //tests:attack_test
  //tools/make_random_models:make_random_models
)
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  "${BAZEL[@]}" build "${TARGETS[@]}" >&2
fi
BIN=$("${BAZEL[@]}" info bazel-bin 2>/dev/null)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
source tools/device/stage_binaries.sh
stage_binaries "$BIN" "$STAGE" "${TARGETS[@]}"
mkdir -p "$STAGE/models/community-1-plda"
cp "$PLDA/xvec_transform.npz" "$PLDA/plda.npz" "$STAGE/models/community-1-plda/"
mkdir -p .device
rm -f .device/attack.tar.xz
tar -C "$STAGE" -cf - bin lib models | xz -T2 -6 >.device/attack.tar.xz
ls -la .device/attack.tar.xz
