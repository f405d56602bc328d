#!/usr/bin/env bash
# On the GPU machine: where the clustering's linkage kernel
# (kernels/centroid_linkage.cu, MergeLoopKernel) spends its time on an audio
# hour's points. One rtfx_main pass of the default configuration
# (rtfx_default.sh, without CUDA graphs: rtfx_main under ncu with graphs
# exited with status 11 on 2026-12-04) under ncu, profiling only the first MergeLoopKernel
# launch (the hour's ~3900 points) with the warp-state, scheduler and
# source-counter sections (the kernel carries line tables, -lineinfo, so
# the stalls are attributed to source lines).
#
#   here:  REAL_MODELS_DIR=DIR tools/device/pack_round.sh
#   run:   carry [".device"], command
#          "ln -sf round.tar.xz .device/payload.tar.xz; bash bench/gpu/linkage_profile.sh"
#
# Output under $OUT/linkage_profile: linkage.ncu-rep, details.csv (every
# section's values), source.csv (per CUDA source line: stall samples and
# instructions), rtfx.log.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
LOGS=${OUT:-$(pwd)/gpu-logs}/linkage_profile
mkdir -p "$LOGS"
source bench/gpu/rtfx_default.sh
rtfx_unpack_payload linkage_profile.sh
NCU=${NCU_BIN:-$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)}
[[ -n "$NCU" ]] || { echo "linkage_profile.sh: no ncu"; exit 2; }
start=$SECONDS
RTFX_LAUNCHER="$NCU --kernel-name regex:MergeLoopKernel --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --section SourceCounters --section LaunchStats --section Occupancy \
  --import-source yes -f -o $LOGS/linkage" \
  rtfx_default "$WORK/bin/rtfx_main" "$LOGS/rtfx.log" 1 "$WORK/engines.tsv" \
  --graphs=false
echo "ncu rc=$? $((SECONDS - start)) s"
if [[ -f "$LOGS/linkage.ncu-rep" ]]; then
  "$NCU" --import "$LOGS/linkage.ncu-rep" --page details --csv >"$LOGS/details.csv" 2>&1
  echo "details rc=$?"
  "$NCU" --import "$LOGS/linkage.ncu-rep" --page source --csv --print-source cuda \
    >"$LOGS/source.csv" 2>&1
  echo "source rc=$?"
  grep -E '"(Duration|Warp Cycles Per Issued Instruction|Issued Warp Per Scheduler|No Eligible|Registers Per Thread|Dynamic Shared Memory Per Block)"' \
    "$LOGS/details.csv" | cut -d, -f12- | head -20
fi
rm -rf "$WORK"
