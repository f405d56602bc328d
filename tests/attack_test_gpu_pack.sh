#!/usr/bin/env bash
# Packs issue 13's attack tests for the GPU machine into .device/attack.tar.xz
# (ignored by git): attack_test, diarization_server_cuda, make_random_models,
# the shared libraries the GPU machine lacks (tools/device/pack_lib.sh)
# and the PLDA. On the GPU machine:
#
#   carry [".device/attack.tar.xz"], command "bash tests/attack_test_gpu_run.sh"
#
# OUTPUT_BASE: a Bazel output base for the build (default: this checkout's).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
source tools/device/pack_lib.sh
pack_init ""
PLDA=${PLDA_DIR:-$ROOT/../shared/models/community-1-plda}
TARGETS=(
  //server:diarization_server_cuda
  //tests:attack_test
  //tools/make_random_models:make_random_models
)
pack_build "${TARGETS[@]}"
stage_binaries "$(pack_bazel_bin)" "$PACK_STAGE" "${TARGETS[@]}"
stage_plda "$PLDA" "$PACK_STAGE/models/community-1-plda"
make_tar "$PACK_STAGE" .device/attack.tar.xz bin lib models
