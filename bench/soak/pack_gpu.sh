#!/usr/bin/env bash
# Packs what the GPU soak needs into .device/soak.tar.xz (ignored by git):
# diarization_server_cuda, soak_client, make_random_models, the shared
# libraries the GPU machine lacks (tools/device/pack_lib.sh), the PLDA
# and two recordings. On the GPU machine:
#
#   carry [".device/soak.tar.xz"], command "bash bench/soak/gpu_run.sh"
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
source tools/device/pack_lib.sh
pack_init /tmp/bazel-runtime
DATA=${DIARIZATION_TEST_DATA:-$ROOT/../shared/data}
PLDA=${PLDA_DIR:-$ROOT/../shared/models/community-1-plda}
TARGETS=(
  //server:diarization_server_cuda
  //bench/soak:soak_client
  //tools/make_random_models:make_random_models
)
pack_build "${TARGETS[@]}"
stage_binaries "$(pack_bazel_bin)" "$PACK_STAGE" "${TARGETS[@]}"
stage_service_audio "$DATA" "$PACK_STAGE/data"
stage_plda "$PLDA" "$PACK_STAGE/plda"
make_tar "$PACK_STAGE" .device/soak.tar.xz bin lib data plda
