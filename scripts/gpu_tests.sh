#!/usr/bin/env bash
# Runs every GPU test and the RTFx benchmark on the GPU machine, from the
# payload tools/device/pack.sh made (.device/payload.tar.xz), and prints a
# summary. Logs go to $OUT (the device tool's output folder) or ./gpu-logs.
#
#   bash scripts/gpu_tests.sh            # tests + benchmark
#   BENCH=0 bash scripts/gpu_tests.sh    # tests only
#   TESTS=0 bash scripts/gpu_tests.sh    # benchmark only
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=${OUT:-$(pwd)/gpu-logs}
mkdir -p "$LOGS"
WORK=$(mktemp -d)
tar -C "$WORK" -xJf .device/payload.tar.xz || { echo "gpu_tests.sh: no payload; run tools/device/pack.sh"; exit 2; }
export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DIARIZATION_TEST_DATA="$WORK/data"
export TEST_TMPDIR="$WORK/tmp"
export DIARIZATION_REAL_MODELS_DIR="$WORK/real"
mkdir -p "$TEST_TMPDIR"

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv 2>&1 | head -3
  for b in "$WORK"/bin/*; do
    missing=$(ldd "$b" | grep "not found")
    [[ -n "$missing" ]] && echo "MISSING LIBS for $(basename "$b"): $missing"
  done
} 2>&1 | tee "$LOGS/env.txt"

passed=0; failed=0; summary=""
TEST_LIST="device_arena_test device_arena_cuda_test kernels_test window_gather_test stem_conv_test conv1d_pool_test conv3x3_c32_test cuda_models_test cuda_reference_test cuda_linkage_test"
[[ "${TESTS:-1}" == 1 ]] || TEST_LIST=""
for t in $TEST_LIST; do
  start=$(date +%s%N)
  timeout 300 "$WORK/bin/$t" --gtest_color=no >"$LOGS/$t.log" 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  if [[ $rc == 0 ]]; then passed=$((passed + 1)); verdict=PASS; else failed=$((failed + 1)); verdict="FAIL(rc=$rc)"; fi
  summary+="$(printf '%-26s %-10s %8d ms' "$t" "$verdict" "$ms")"$'\n'
  # Measured numbers the tests print, and failures.
  grep -E "max |relative|RUN|FAILED|Failure|Expected|Which is|error|ResourceExhausted|arena:" "$LOGS/$t.log" \
    | grep -v "^\[ RUN" | head -40 | sed "s/^/  [$t] /"
done

if [[ "${BENCH:-1}" == 1 ]]; then
  # Each configuration: optional VAR=value words, then rtfx_main flags.
  # BENCH_CONFIGS="cfg1;cfg2" overrides the list.
  REAL="--segmentation_weights=$WORK/real/segmentation.safetensors"
  if [[ -n "${BENCH_CONFIGS:-}" ]]; then
    IFS=';' read -ra CONFIGS <<<"$BENCH_CONFIGS"
  else
    CONFIGS=(
      "--embedding_precision=tf32 --batch=32 --seg_batch=32 --overlap --timed_algos --repeats=2"
      "--embedding_precision=tf32 --batch=32 --seg_batch=128 --overlap --timed_algos --repeats=2"
      "--embedding_precision=fp32 --batch=32 --seg_batch=32 --overlap --timed_algos --repeats=2"
      "--embedding_precision=fp32 --batch=32 --seg_batch=128 --overlap --timed_algos --repeats=1"
      "--embedding_precision=tf32 --batch=32 --seg_batch=32 --timed_algos --repeats=1"
      "--embedding_precision=tf32 --batch=32 --seg_batch=32 --overlap --timed_algos --repeats=1 REALSEG"
    )
  fi
  i=0
  for cfg in "${CONFIGS[@]}"; do
    i=$((i + 1))
    envs=(); flags=()
    for word in $cfg; do
      case "$word" in
        REALSEG) flags+=("$REAL") ;;
        --*) flags+=("$word") ;;
        *=*) envs+=("$word") ;;
      esac
    done
    log="$LOGS/rtfx_$i.log"
    echo "$cfg" >"$log"
    timeout 240 env "${envs[@]}" "$WORK/bin/rtfx_main" --data "$WORK/data" --plda "$WORK/plda" \
      --hours "${BENCH_HOURS:-1}" "${flags[@]}" >>"$log" 2>&1
    rc=$?
    echo "== rtfx_main [$i] $cfg rc=$rc"
    sed -n 2,12p "$log"
  done
fi

if [[ "${NCU:-0}" == 1 ]] && command -v ncu >/dev/null; then
  # Per-kernel device time of one short eager pass (no graphs), summed by name.
  timeout 150 ncu --clock-control none --launch-count 150 --metrics gpu__time_duration.sum --csv --page raw \
    "$WORK/bin/rtfx_main" --data "$WORK/data" --plda "$WORK/plda" --hours 0.0095 \
    --batch 32 --seg_batch 32 --repeats 1 --graphs=false --embedding_precision "${NCU_PRECISION:-tf32}" ${NCU_EXTRA:-} \
    >"$LOGS/ncu.csv" 2>"$LOGS/ncu.err"
  echo "== ncu rc=$? (--hours 0.0095: one batch of windows, warm-up + 1 pass + fbank)"
  python3 bench/gpu/ncu_summary.py "$LOGS/ncu.csv" 30 || tail -5 "$LOGS/ncu.err"
fi

echo "==== GPU tests ===="
printf '%s' "$summary"
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
