#!/usr/bin/env bash
# Builds (here, no GPU needed) and packs what bench/qualify/gpu_round.sh runs
# on the GPU machine into .device/qualify.tar.xz (ignored by git): the
# cluster-LSTM test, kernels_test, the qualification harness, the engine
# benchmark, the server and client (for the two-pipeline GetInfo check),
# make_random_models, the shared libraries that machine lacks
# (tools/device/stage_binaries.sh), the PLDA and one recording.
#
#   bash bench/qualify/pack_gpu.sh
#   device run: carry [".device/qualify.tar.xz"],
#               command "bash bench/qualify/gpu_round.sh"
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
DATA=${DIARIZATION_TEST_DATA:-$ROOT/../shared/data}
PLDA=${PLDA_DIR:-$ROOT/../shared/models/community-1-plda}
BAZEL=(bazel)
[[ -n "${OUTPUT_BASE:-}" ]] && BAZEL+=(--output_base="$OUTPUT_BASE")
TARGETS=(
  //kernels:lstm_cluster_test
  //kernels:kernels_test
  //bench/qualify:qualify_main
  //bench/service_overhead:engine_direct_cuda
  //server:diarization_server_cuda
  //clients:diarize_client
  //tools/make_random_models:make_random_models
)
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  "${BAZEL[@]}" build "${TARGETS[@]}" >&2
fi
BIN=$("${BAZEL[@]}" info bazel-bin 2>/dev/null)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/data" "$STAGE/plda"
source tools/device/stage_binaries.sh
stage_binaries "$BIN" "$STAGE" "${TARGETS[@]}"
cp "$DATA/pyannote-audio/sample/sample.wav" "$STAGE/data/sample.wav"
# bench/service_overhead/grpc_streams.sh (step "grpc") tiles this one.
cp "$DATA/findit-dia-parity/05_four_speaker/clip_16k.wav" "$STAGE/data/four_speaker.wav"
cp "$PLDA/xvec_transform.npz" "$PLDA/plda.npz" "$STAGE/plda/"
git rev-parse HEAD >"$STAGE/commit" 2>/dev/null || echo unknown >"$STAGE/commit"
git status --porcelain --untracked-files=no | head -20 >"$STAGE/dirty" || true
mkdir -p .device
rm -f .device/qualify.tar.xz
tar -C "$STAGE" -cf - bin lib data plda commit dirty | xz -T2 -6 >.device/qualify.tar.xz
ls -la .device/qualify.tar.xz
echo "pack_gpu.sh: $(ls "$STAGE/bin" | wc -l) binaries, $(ls "$STAGE/lib" | wc -l) libraries, commit $(cat "$STAGE/commit")"
