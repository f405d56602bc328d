#!/usr/bin/env bash
# Part "tests" of bench/gpu/round.sh: every GPU test binary of the payload
# (kit "tests"), each with a timeout; one JSON line per test.
# TESTS: the binaries to run (default: the kit's); CUDA_MODELS_FILTER: a
# --gtest_filter for cuda_models_test.
set -uo pipefail
: "${WORK:?run through bench/gpu/round.sh}"
source tools/device/kits.sh
default=""
for t in ${KIT_TARGETS[tests]}; do default+=" ${t##*:}"; done
failures=0
for t in ${TESTS:-$default}; do
  if [[ ! -x "$B/$t" ]]; then
    echo "{\"part\": \"tests\", \"test\": \"$t\", \"rc\": -1, \"ms\": 0, \"error\": \"not in the payload\"}"
    echo "  $t MISSING"
    failures=$((failures + 1))
    continue
  fi
  filter=()
  [[ $t == cuda_models_test && -n "${CUDA_MODELS_FILTER:-}" ]] && filter=(--gtest_filter="$CUDA_MODELS_FILTER")
  s=$(date +%s%N)
  timeout "${TEST_TIMEOUT_S:-300}" "$B/$t" --gtest_color=no ${filter[@]+"${filter[@]}"} >"$PART_OUT/$t.log" 2>&1
  rc=$?
  ms=$((($(date +%s%N) - s) / 1000000))
  [[ $rc == 0 ]] || failures=$((failures + 1))
  failed=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$PART_OUT/$t.log")
  echo "{\"part\": \"tests\", \"test\": \"$t\", \"rc\": $rc, \"ms\": $ms, \"failed_cases\": $failed}"
  echo "  $t $([[ $rc == 0 ]] && echo PASS || echo "FAIL rc=$rc") $ms ms"
  # The figures the tests print, and the failures.
  grep -E "max |relative|FAILED|Failure|Expected|Which is|error" "$PART_OUT/$t.log" | grep -v '^\[ RUN' | head -20 | sed "s/^/    /"
done
[[ $failures == 0 ]]
