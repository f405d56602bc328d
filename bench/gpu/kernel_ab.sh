#!/usr/bin/env bash
# On the GPU machine: ncu's time per kernel of the payload's rtfx_main (B)
# against a baseline build (A), on the same 121 windows (one segmentation
# batch of 128, four embedding batches of 32), then ncu_summary.py's A/B
# table: launches and time per launch in each, B/A per kernel name.
#
#   here:  tools/device/pack.sh; copy the baseline's rtfx_main to
#          .device/baseline/rtfx_main
#   run:   carry [".device/payload.tar.xz", ".device/baseline"],
#          command "bash bench/gpu/kernel_ab.sh"
#   KERNELS: ncu's --kernel-name (default: the project's kernels, cuBLAS,
#            cuFFT; the convolutions are left out, see below)
#   SEG_BATCH (128), FLAGS (extra rtfx_main flags)
#
# The trunk runs on the legacy convolution API here: the graph API times up
# to 24 cuDNN engines per layer at load, and those launches would fill
# ncu's log before the measured passes (seen 2026-12-03). Per-layer trunk
# times come from rtfx_main's own "graph conv" lines (layer_table.py).
set -uo pipefail
cd "$(dirname "$0")/../.."
LOGS=${OUT:-$(pwd)/gpu-logs}/kernel_ab
mkdir -p "$LOGS"
source bench/gpu/rtfx_default.sh
rtfx_unpack_payload kernel_ab.sh
rtfx_take_baseline kernel_ab.sh
NCU=${NCU_BIN:-$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)}
[[ -n "$NCU" ]] || { echo "kernel_ab.sh: no ncu"; exit 2; }
KERNELS=${KERNELS:-regex:Kernel|xmma_gemm|sgemm|dgemm|cutlass|gemv|fft|FFT}
for side in A B; do
  bin=$WORK/bin/rtfx_main; [[ $side == A ]] && bin=$WORK/bin/rtfx_main_baseline
  start=$SECONDS
  # shellcheck disable=SC2086  # FLAGS are words by design
  LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" TMPDIR="$WORK" \
    timeout 150 "$NCU" --csv --page raw --kernel-name "$KERNELS" \
    --metrics gpu__time_duration.sum "$bin" --data "$WORK/data" --plda "$WORK/plda" \
    --segmentation_weights "$WORK/real/segmentation.safetensors" --hours 0.036 \
    --seg_batch="${SEG_BATCH:-128}" --batch=32 --graphs=false --repeats=1 \
    --conv_api=legacy ${FLAGS:-} >"$LOGS/$side.csv" 2>"$LOGS/$side.err"
  echo "ncu $side rc=$? $((SECONDS - start)) s"
done
python3 bench/gpu/ncu_summary.py "$LOGS/A.csv" "$LOGS/B.csv" "${TOP:-30}" | tee "$LOGS/summary.txt"
