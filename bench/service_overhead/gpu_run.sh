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
echo "== engine direct: one 30 s request at a time =="
$E --audio "$S" --mode unary --requests 10 --warmup 2
$E --audio "$S" --mode stream --requests 10 --warmup 2
echo "== engine direct: 10 min recordings, 1 and 8 at once =="
$E --audio "$S" --repeat_audio 20 --mode unary --requests 4 --warmup 1
$E --audio "$S" --repeat_audio 20 --mode unary --requests 16 --concurrency 8 --warmup 1
echo "== engine direct: 60 s streams, 32 at once =="
$E --audio "$S" --repeat_audio 2 --mode stream --requests 64 --concurrency 32 --warmup 1
echo "== engine vs gRPC loopback =="
BIN_DIR="$WORK/bin" ENGINE_TARGET=:engine_direct_cuda SERVER_TARGET=:diarization_server_cuda \
  bash bench/service_overhead/run.sh --audio "$S" --models "$WORK/models" \
  --device cuda:0 --requests 10 --mode both
echo "rc=$?"
