#!/usr/bin/env bash
# Builds (here, no GPU needed) and packs what bench/qualify/gpu_round.sh runs
# on the GPU machine into .device/qualify.tar.xz (ignored by git): the
# cluster-LSTM test, kernels_test, the qualification harness, the engine
# benchmark, the server and client (for the two-pipeline GetInfo check),
# make_random_models, the shared libraries that machine lacks
# (tools/device/pack_lib.sh), the PLDA and one recording.
#
#   bash bench/qualify/pack_gpu.sh
#   GPU machine: carry [".device/qualify.tar.xz"],
#                command "bash bench/qualify/gpu_round.sh"
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
source tools/device/pack_lib.sh
pack_init ""
DATA=${DIARIZATION_TEST_DATA:-$ROOT/../shared/data}
PLDA=${PLDA_DIR:-$ROOT/../shared/models/community-1-plda}
TARGETS=(
  //kernels:lstm_cluster_test
  //kernels:kernels_test
  //bench/qualify:qualify_main
  //bench/service_overhead:engine_direct_cuda
  //server:diarization_server_cuda
  //clients:diarize_client
  //tools/make_random_models:make_random_models
)
pack_build "${TARGETS[@]}"
stage_binaries "$(pack_bazel_bin)" "$PACK_STAGE" "${TARGETS[@]}"
stage_service_audio "$DATA" "$PACK_STAGE/data"
stage_plda "$PLDA" "$PACK_STAGE/plda"
git rev-parse HEAD >"$PACK_STAGE/commit" 2>/dev/null || echo unknown >"$PACK_STAGE/commit"
git status --porcelain --untracked-files=no | head -20 >"$PACK_STAGE/dirty" || true
make_tar "$PACK_STAGE" .device/qualify.tar.xz bin lib data plda commit dirty
echo "pack_gpu.sh: $(ls "$PACK_STAGE/bin" | wc -l) binaries, $(ls "$PACK_STAGE/lib" | wc -l) libraries, commit $(cat "$PACK_STAGE/commit")"
