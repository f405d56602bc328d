#!/usr/bin/env bash
# On the GPU machine: compute-sanitizer's memcheck, racecheck, initcheck and
# synccheck over the GPU centroid linkage (kernels/centroid_linkage.cu,
# engine/models/cuda_linkage) through the payload's cuda_linkage_test, its
# random problems capped at MAX_N points (default 300: the sanitizers slow
# the one-block kernel by orders of magnitude). The bit-for-bit test against
# the host linkage and the size checks run under each tool (not the
# 3000-point AhcCluster test).
#
#   here:  tools/device/pack.sh
#   run:   carry [".device/payload.tar.xz"], command "bash bench/gpu/linkage_sanitizers.sh"
#
# Output under $OUT/linkage_sanitizers: one log per tool, summary.txt.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
LOGS=${OUT:-$(pwd)/gpu-logs}/linkage_sanitizers
mkdir -p "$LOGS"
W=$(mktemp -d)
tar -C "$W" -xJf .device/payload.tar.xz || { echo "linkage_sanitizers.sh: no payload"; exit 2; }
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
[[ -x "$SAN" ]] || { echo "linkage_sanitizers.sh: no compute-sanitizer"; exit 2; }
status=0
for tool in memcheck racecheck initcheck synccheck; do
  s=$SECONDS
  LD_LIBRARY_PATH="$W/lib" CUDA_LINKAGE_TEST_MAX_N=${MAX_N:-300} timeout "${TOOL_TIMEOUT_S:-150}" \
    "$SAN" --tool "$tool" --error-exitcode 7 "$W/bin/cuda_linkage_test" --gtest_color=no \
    --gtest_filter='CudaLinkage.MatchesHostLinkageBitForBit:CudaLinkage.RefusesSizesOutsideItsRange' >"$LOGS/$tool.log" 2>&1
  rc=$?
  [[ $rc -ne 0 ]] && status=1
  echo "$tool rc=$rc $((SECONDS - s)) s: $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/$tool.log"); $(grep -cE '^\[       OK \]' "$LOGS/$tool.log") tests passed" |
    tee -a "$LOGS/summary.txt"
done
rm -rf "$W"
exit "$status"
