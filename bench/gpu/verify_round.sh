#!/usr/bin/env bash
# On the GPU machine, one call (about 6-7 minutes): the payload's GPU tests,
# its RTFx against a baseline build (rtfx_ab.sh), its per-kernel times
# against it (kernel_ab.sh), and its fixture RTTMs against the CPU backend's
# (fixture_rttms.sh). A round's usual checks in one call, since every
# machine start costs device time.
#
#   here:  REAL_MODELS_DIR=DIR tools/device/pack.sh
#          cp <baseline build's rtfx_main> .device/baseline/rtfx_main
#          MODELS=DIR bash bench/gpu/cpu_fixture_rttms.sh
#   run:   carry [".device/payload.tar.xz", ".device/baseline",
#          ".device/cpu_rttm"], command "bash bench/gpu/verify_round.sh"
#
# PARTS (default "tests rtfx kernels fixtures") picks steps; EVERY_CALL=1
# adds cuda_models_test's every-call graph-trunk test (about 220 s: with it
# the call nears the 600 s limit, so leave a step out). Each test binary has
# TEST_TIMEOUT_S (default 200 s, cuda_models_test 370 s: its cases took 200
# s without the pipelining ones on 2026-12-04, the engine-cache budget case
# adds ~35 s, and a binary stopped by its timeout is reported TIMED OUT,
# its later cases not run); TESTS (a list of
# the binaries) runs only those, and
# CUDA_MODELS_FILTER is cuda_models_test's --gtest_filter. Output under $OUT: tests/*.log, rtfx_ab/,
# kernel_ab/, fixture_rttms.tar, and summary.txt with every verdict.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(pwd)/gpu-logs}
mkdir -p "$OUT/tests"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
PARTS=${PARTS:-tests rtfx kernels fixtures}
has() { [[ " $PARTS " == *" $1 "* ]]; }
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1 | sed 's/^/gpu: /' | tee -a "$SUMMARY"

if has tests; then
  W=$(mktemp -d)
  tar -C "$W" -xJf .device/payload.tar.xz || { say "verify_round.sh: no payload"; exit 2; }
  mkdir -p "$W/tmp"  # the tests write their random weights there
  for t in ${TESTS:-kernels_test cuda_models_test cuda_reference_test device_arena_test \
           device_arena_cuda_test window_gather_test stem_conv_test conv1d_pool_test conv3x3_c32_test \
           cuda_linkage_test}; do
    [[ -x "$W/bin/$t" ]] || { say "$t: not in the payload"; continue; }
    filter=()
    if [[ $t == cuda_models_test && -n "${CUDA_MODELS_FILTER:-}" ]]; then
      filter=(--gtest_filter="$CUDA_MODELS_FILTER")
    elif [[ $t == cuda_models_test && "${EVERY_CALL:-0}" != 1 ]]; then
      filter=(--gtest_filter=-*EveryCallOfEveryLoad*)
    fi
    s=$SECONDS
    limit=${TEST_TIMEOUT_S:-200}
    [[ -z "${TEST_TIMEOUT_S:-}" && $t == cuda_models_test ]] && limit=370
    LD_LIBRARY_PATH="$W/lib" DIARIZATION_TEST_DATA="$W/data" TEST_TMPDIR="$W/tmp" \
      DIARIZATION_REAL_MODELS_DIR="$W/real" timeout "$limit" \
      "$W/bin/$t" --gtest_color=no "${filter[@]}" >"$OUT/tests/$t.log" 2>&1
    rc=$?
    verdict=""
    [[ $rc == 124 ]] && verdict=" TIMED OUT after $limit s while $(grep -E '^\[ RUN      \]' "$OUT/tests/$t.log" | tail -1 | sed 's/.*\] //') ran; later cases did not run"
    say "$t rc=$rc $((SECONDS - s)) s: $(grep -cE '^\[       OK \]' "$OUT/tests/$t.log") passed, $(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$OUT/tests/$t.log") failed$verdict"
    # Each failed case once (its result line, with its time).
    grep -E '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$OUT/tests/$t.log" | sed 's/^/  /' | tee -a "$SUMMARY"
  done
  # The parity figures the tests print.
  grep -hE "vs pyannote|max \|cuda - cpu\||max relative|merges identical|of 4 on the GPU" "$OUT"/tests/cuda_*.log | head -20 | sed 's/^/  /' | tee -a "$SUMMARY"
  rm -rf "$W"
fi
if has rtfx; then
  OUT=$OUT bash bench/gpu/rtfx_ab.sh 2>&1 | tail -12 | tee -a "$SUMMARY"
fi
if has kernels; then
  OUT=$OUT bash bench/gpu/kernel_ab.sh 2>&1 | tail -25 | tee -a "$SUMMARY"
fi
if has fixtures; then
  OUT=$OUT BUDGET_S=${FIXTURE_BUDGET_S:-120} \
    VARIANTS=${VARIANTS:-"tf32|--embedding_precision=tf32 --conv_engine_cache=/tmp/verify_round_engines.tsv;fp32|--embedding_precision=fp32"} \
    bash bench/gpu/fixture_rttms.sh 2>&1 | tail -1 | tee -a "$SUMMARY"
fi
say "verify_round.sh: $((SECONDS - start)) s"
