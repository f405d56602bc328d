#!/usr/bin/env bash
# Part "attack" of bench/gpu/round.sh: tests/attack_test (abusive clients
# against the real server, docs/reliability.md) with the payload's server
# on $DEVICE (ATTACK_DEVICE cuda:0; cpu in a rehearsal). GTEST_FILTER picks
# cases; ATTACK_TIMEOUT_S (560) bounds it. One JSON line.
set -uo pipefail
: "${WORK:?run through bench/gpu/round.sh}"
mkdir -p "$WORK/runfiles/diarization/tools/make_random_models" "$WORK/attack_models"
cp "$B/make_random_models" "$WORK/runfiles/diarization/tools/make_random_models/"
# attack_test finds the PLDA at $DIARIZATION_MODELS_DIR/community-1-plda.
ln -sfn "$WORK/plda" "$WORK/attack_models/community-1-plda"
export TEST_SRCDIR="$WORK/runfiles" DIARIZATION_MODELS_DIR="$WORK/attack_models"
export DIARIZATION_SERVER_UNDER_TEST="$SERVER_BIN"
dev=$DEVICE
[[ $dev == cuda ]] && dev=cuda:0
export ATTACK_DEVICE=${ATTACK_DEVICE:-$dev}
# The GPU's flat bound (the victim's final within 1 s of its end); the CPU
# keeps the test's own, relative one.
[[ $DEVICE == cuda* ]] && export ATTACK_VICTIM_BOUND_S=${ATTACK_VICTIM_BOUND_S:-1}
timeout "${ATTACK_TIMEOUT_S:-560}" "$B/attack_test" --gtest_color=no \
  ${GTEST_FILTER:+--gtest_filter="$GTEST_FILTER"} >"$PART_OUT/attack_test.log" 2>&1
rc=$?
passed=$(grep -c '^\[       OK \]' "$PART_OUT/attack_test.log")
failed=$(grep -c '^\[  FAILED  \] [A-Za-z].*(' "$PART_OUT/attack_test.log")
echo "{\"part\": \"attack\", \"rc\": $rc, \"cases_passed\": $passed, \"cases_failed\": $failed}"
grep -E "^victim:|^bomb |^RSS |drain with|fast stream:|Failure|Expected|Which is|^\[  FAILED" \
  "$PART_OUT/attack_test.log" | head -20 | sed 's/^/  /'
exit $rc
