#!/usr/bin/env bash
# Packs what the service-overhead benchmark needs on the GPU machine into
# .device/service-overhead.tar.xz (ignored by git): engine_direct_cuda,
# diarization_server_cuda, diarize_client, make_random_models, the shared
# libraries that machine lacks (tools/device/pack_lib.sh), the PLDA and a few
# golden recordings. On the GPU machine:
#
#   carry [".device/service-overhead.tar.xz"],
#   command "bash bench/service_overhead/gpu_run.sh"
#
# BASELINE_SERVER=FILE adds an older diarization_server_cuda (built from
# another commit, with the same libraries) as bin/diarization_server_cuda_baseline,
# for grpc_streams_ab.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
source tools/device/pack_lib.sh
pack_init /tmp/bazel-runtime
DATA=${DIARIZATION_TEST_DATA:-$ROOT/../shared/data}
PLDA=${PLDA_DIR:-$ROOT/../shared/models/community-1-plda}
TARGETS=(
  //bench/service_overhead:engine_direct_cuda
  //server:diarization_server_cuda
  //clients:diarize_client
  //tools/make_random_models:make_random_models
)
pack_build "${TARGETS[@]}"
stage_binaries "$(pack_bazel_bin)" "$PACK_STAGE" "${TARGETS[@]}"
if [[ -n "${BASELINE_SERVER:-}" ]]; then
  install -m 0755 "$BASELINE_SERVER" "$PACK_STAGE/bin/diarization_server_cuda_baseline"
fi
stage_service_audio "$DATA" "$PACK_STAGE/data"
stage_plda "$PLDA" "$PACK_STAGE/plda"
make_tar "$PACK_STAGE" .device/service-overhead.tar.xz bin lib data plda
