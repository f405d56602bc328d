#!/usr/bin/env bash
# On the GPU machine: unpacks .device/service-overhead.tar.xz (pack_gpu.sh),
# makes a random-weight model directory, then runs the engine-direct
# benchmark (latency and throughput) and run.sh (engine vs gRPC loopback).
# Output goes to stdout and $OUT/service_overhead.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp}/service_overhead.log
exec > >(tee "$LOG") 2>&1
WORK=$(mktemp -d)
tar -C "$WORK" -xJf .device/service-overhead.tar.xz || { echo "no payload"; exit 2; }
export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | head -2
nproc
for b in "$WORK"/bin/*; do
  ldd "$b" | grep "not found" && echo "MISSING LIBS for $b"
done
"$WORK/bin/make_random_models" --out "$WORK/models" --plda_from "$WORK/plda" || exit 1
E="$WORK/bin/engine_direct_cuda --models $WORK/models --device cuda:0"
S="$WORK/data/sample.wav"
if [[ "${PART:-all}" == all || "${PART:-all}" == engine ]]; then
for cs in false true; do
  echo "== engine direct, concurrent_stages=$cs =="
  $E --concurrent_stages=$cs --audio "$S" --mode unary --requests 10 --warmup 2
  $E --concurrent_stages=$cs --audio "$S" --mode stream --requests 10 --warmup 2
  $E --concurrent_stages=$cs --audio "$S" --repeat_audio 20 --mode unary --requests 4 --warmup 1
  $E --concurrent_stages=$cs --audio "$S" --repeat_audio 20 --mode unary --requests 16 --concurrency 8 --warmup 1
  $E --concurrent_stages=$cs --audio "$S" --repeat_audio 2 --mode stream --requests 64 --concurrency 32 --warmup 1
done
echo "== batch 64 / 128, concurrent stages, 10 min x 8 =="
for bs in 64 128; do
  $E --concurrent_stages=true --segmentation_batch_size $bs --embedding_batch_size $bs \
    --audio "$S" --repeat_audio 20 --mode unary --requests 16 --concurrency 8 --warmup 1
done
fi
if [[ "${PART:-all}" == all || "${PART:-all}" == verify ]]; then
echo "== same RTTM with and without concurrent stages =="
for cs in false true; do
  $E --concurrent_stages=$cs --audio "$S" --repeat_audio 20 --mode unary \
    --requests 1 --warmup 0 --rttm_out "$WORK/long_$cs.rttm" >/dev/null
  $E --concurrent_stages=$cs --audio "$S" --repeat_audio 2 --mode stream \
    --requests 64 --concurrency 32 --warmup 0 --rttm_out "$WORK/streams_$cs.rttm" >/dev/null
done
for k in long streams; do
  if cmp -s "$WORK/${k}_false.rttm" "$WORK/${k}_true.rttm"; then
    echo "$k: identical RTTM ($(wc -l <"$WORK/${k}_true.rttm") lines)"
  else
    echo "$k: RTTM DIFFERS"; diff "$WORK/${k}_false.rttm" "$WORK/${k}_true.rttm" | head -5
  fi
done
fi
if [[ "${PART:-all}" == all || "${PART:-all}" == grpc ]]; then
echo "== engine vs gRPC loopback =="
BIN_DIR="$WORK/bin" ENGINE_TARGET=:engine_direct_cuda SERVER_TARGET=:diarization_server_cuda \
  bash bench/service_overhead/run.sh --audio "$S" --models "$WORK/models" \
  --device cuda:0 --requests 10 --mode both
echo "rc=$?"
fi
