#!/usr/bin/env bash
# On the GPU machine, one call: every tile form of the layer1 kernel
# (kernels/conv3x3_c32.h) checked, timed alone and profiled, then end to end
# against each other and cuDNN, then the round's usual tests and fixture
# RTTMs. Each form's test and bench run in a process of their own, so a form
# that faults the CUDA context cannot stop the others.
#
#   here:  REAL_MODELS_DIR=DIR tools/device/pack.sh
#          MODELS=DIR bash bench/gpu/cpu_fixture_rttms.sh
#   run:   carry [".device"], command "bash bench/gpu/layer1_round.sh"
#
# TILES (default: every form) names the forms; E2E_TILES the forms run end
# to end (default: rows2 and the shared-memory-A forms, those whose test
# passed); PARTS (default "kernel ncu e2e verify") picks
# steps. Output under $OUT (many files: tar them for the device tool's
# return): kernel/*.log, ncu/*.csv, rtfx_variants/, verify/, summary.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(pwd)/gpu-logs}
mkdir -p "$OUT/kernel" "$OUT/ncu"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
PARTS=${PARTS:-kernel ncu e2e verify}
has() { [[ " $PARTS " == *" $1 "* ]]; }
TILES=${TILES:-wgmma_rows2 wgmma_rows4 wgmma_rows2_serial wgmma_rows2_smem_a}
# End to end: the default form and the shared-memory-A forms, each only if
# its test passed in this call.
E2E_TILES=${E2E_TILES:-wgmma_rows2 wgmma_rows2_smem_a}
declare -A test_rc
start=$SECONDS
W=$(mktemp -d)
tar -C "$W" -xJf .device/payload.tar.xz || { say "layer1_round.sh: no payload"; exit 2; }
export LD_LIBRARY_PATH="$W/lib"
mkdir -p "$W/tmp"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>&1 | head -1)"

if has kernel; then
  for t in $TILES; do
    CONV3X3_C32_TILES=$t TEST_TMPDIR="$W/tmp" timeout 120 "$W/bin/conv3x3_c32_test" \
      --gtest_color=no >"$OUT/kernel/test_$t.log" 2>&1
    rc=$?
    test_rc[$t]=$rc
    say "conv3x3_c32_test $t rc=$rc: $(grep -c '^\[       OK \]' "$OUT/kernel/test_$t.log") passed," \
      "$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$OUT/kernel/test_$t.log") failed;" \
      "relative (exact) $(grep -oE 'relative [0-9.e+-]+' "$OUT/kernel/test_$t.log" | awk '{print $2}' | sort -g | sed -n '1p;$p' | tr '\n' ' ')" \
      "(tf32-rounded) $(grep -oE '[0-9.e+-]+ \(tf32' "$OUT/kernel/test_$t.log" | awk '{print $1}' | sort -g | sed -n '1p;$p' | tr '\n' ' ')"
    [[ $rc != 0 ]] && grep -E "error|Error|Failure|Expected|Which is|CUDA" "$OUT/kernel/test_$t.log" | head -6 | sed 's/^/  /' | tee -a "$SUMMARY"
  done
  for round in 1 2; do
    for t in $TILES; do
      CONV3X3_C32_TILES=$t timeout 60 "$W/bin/conv3x3_c32_bench" >"$OUT/kernel/bench_${t}_$round.log" 2>&1
      say "bench round $round (rc=$?): $(grep -E "^$t " "$OUT/kernel/bench_${t}_$round.log" | tr -s ' ' | tr '\n' ';')"
    done
  done
fi

if has ncu; then
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  for t in $TILES; do
    [[ -z "$NCU" ]] && { say "ncu not found"; break; }
    CONV3X3_C32_TILES=$t timeout 90 "$NCU" --clock-control none --kernel-name regex:Conv3x3C32 \
      --launch-skip 3 --launch-count 1 --csv --page raw \
      --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_issued.avg.pct_of_peak_sustained_active,smsp__warps_eligible.avg.per_cycle_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
      "$W/bin/conv3x3_c32_bench" --repeats=2 >"$OUT/ncu/$t.csv" 2>&1
    say "ncu $t rc=$?"
  done
fi

if has e2e; then
  v=$'cudnn|--layer1_kernel=false'
  for t in $E2E_TILES; do
    [[ "${test_rc[$t]:-0}" != 0 ]] && { say "e2e: $t left out (its test failed)"; continue; }
    v+=$'\n'"$t|--layer1_tile=$t"; done
  OUT=$OUT VARIANTS="$v" ROUNDS=${ROUNDS:-2} timeout 300 bash bench/gpu/rtfx_variants.sh 2>&1 | tail -20 | tee -a "$SUMMARY"
fi

if has verify; then
  OUT=$OUT/verify PARTS=${VERIFY_PARTS:-"tests fixtures"} timeout $(( 590 - (SECONDS - start) )) \
    bash bench/gpu/verify_round.sh 2>&1 | tail -30 >>"$SUMMARY"
fi
say "layer1_round.sh: $((SECONDS - start)) s"
