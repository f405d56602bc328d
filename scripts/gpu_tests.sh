#!/usr/bin/env bash
# Runs every GPU test and the RTFx benchmark on the GPU machine, from the
# payload tools/device/pack.sh made (.device/payload.tar.xz), and prints a
# summary. Logs go to $OUT (the device tool's output folder) or ./gpu-logs.
#
#   bash scripts/gpu_tests.sh            # tests + benchmark
#   BENCH=0 bash scripts/gpu_tests.sh    # tests only
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
for t in device_arena_test device_arena_cuda_test powerset_decode_test kernels_test \
         cuda_models_test cuda_reference_test; do
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
  # precision, batch, timed convolution algorithms
  # (BENCH_CONFIGS="fp32 32 false;tf32 128 true" overrides the list.)
  if [[ -n "${BENCH_CONFIGS:-}" ]]; then
    IFS=';' read -ra CONFIGS <<<"$BENCH_CONFIGS"
  else
    CONFIGS=("fp32 32 false" "fp32 128 true" "tf32 128 true" "tf32 32 true")
  fi
  for cfg in "${CONFIGS[@]}"; do
    set -- $cfg
    prec=$1; batch=$2; timed=$3; log="$LOGS/rtfx_${prec}_b${batch}_timed${timed}.log"
    timeout 300 "$WORK/bin/rtfx_main" --data "$WORK/data" --plda "$WORK/plda" --hours 1 \
      --batch "$batch" --embedding_precision "$prec" --timed_algos="$timed" --repeats 2 >"$log" 2>&1
    rc=$?
    if [[ $rc != 0 ]]; then
      tail -3 "$log"
      echo "rtfx_main ($prec, batch $batch) failed (rc=$rc); again without CUDA graphs"
      timeout 300 "$WORK/bin/rtfx_main" --data "$WORK/data" --plda "$WORK/plda" --hours 1 \
        --batch "$batch" --embedding_precision "$prec" --timed_algos="$timed" --repeats 2 \
        --graphs=false >"$log" 2>&1
      rc=$?
    fi
    echo "== rtfx_main ($prec, batch $batch, timed algorithms $timed) rc=$rc"
    head -9 "$log"
  done
fi

echo "==== GPU tests ===="
printf '%s' "$summary"
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
