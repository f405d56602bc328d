#!/usr/bin/env bash
# On the GPU machine: unpacks .device/soak.tar.xz (pack_gpu.sh), makes a
# random-weights model directory and runs the soak (bench/soak/soak.sh) with
# the carried binaries: 64 paced streams for 5 minutes at real time, then
# 64 streams for 2 minutes at 10x real time (the devices busier). Each phase
# prints one JSON line (lost, p50/p99 final-result latency, RSS first/last
# quarter) and "rc=" (0 = no lost result, flat memory, clean exit). Output
# also goes to $OUT/soak.log. MINUTES / STREAMS override the first phase.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp}/soak.log
exec > >(tee "$LOG") 2>&1
WORK=$(mktemp -d)
tar -C "$WORK" -xJf .device/soak.tar.xz || { echo "no payload"; exit 2; }
export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | head -2
nproc
for b in "$WORK"/bin/*; do
  ldd "$b" | grep "not found" && echo "MISSING LIBS for $b"
done
"$WORK/bin/make_random_models" --out "$WORK/models" --plda_from "$WORK/plda" || exit 1
echo "== soak: ${STREAMS:-64} streams x ${MINUTES:-5} min, real time =="
BIN_DIR="$WORK/bin" bash bench/soak/soak.sh --device cuda:0 \
  --models "$WORK/models" --audio "$WORK/data/sample.wav" \
  --streams "${STREAMS:-64}" --minutes "${MINUTES:-5}" --speed 1 --connections 8
echo "rc=$?"
echo "== soak: 64 streams x 2 min, 10x real time =="
BIN_DIR="$WORK/bin" bash bench/soak/soak.sh --device cuda:0 \
  --models "$WORK/models" --audio "$WORK/data/four_speaker.wav" \
  --streams 64 --minutes 2 --speed 10 --connections 8
echo "rc=$?"
