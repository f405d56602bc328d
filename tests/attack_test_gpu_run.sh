#!/usr/bin/env bash
# On the GPU machine: issue 13's attack tests (tests/attack_test.cc) against
# the CUDA server, from .device/attack.tar.xz (tests/attack_test_gpu_pack.sh).
# Each case starts diarization_server_cuda --device=cuda:0 on 127.0.0.1 with
# random weights, and where a paced victim stream runs during the attack its
# final result must come within ATTACK_VICTIM_BOUND_S (default 1) second of
# its end: the issue's "done when", flat. Prints the victims' latencies and
# what each case measured, then gtest's verdict per case, and "rc=" (0: all
# passed). The whole log goes to $OUT/attack_gpu.log.
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=${OUT:-/tmp}/attack_gpu.log
mkdir -p "$(dirname "$LOG")"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
tar -C "$WORK" -xJf .device/attack.tar.xz || { echo "no payload; run tests/attack_test_gpu_pack.sh"; exit 2; }
export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | head -2 || echo "no nvidia-smi"
for b in "$WORK"/bin/*; do
  ldd "$b" | grep "not found" && echo "MISSING LIBS for $b"
done
# The test finds make_random_models in its runfiles and the PLDA in the
# shared models folder.
mkdir -p "$WORK/runfiles/diarization/tools/make_random_models" "$WORK/tmp"
cp "$WORK/bin/make_random_models" "$WORK/runfiles/diarization/tools/make_random_models/"
export TEST_SRCDIR="$WORK/runfiles" TEST_TMPDIR="$WORK/tmp"
export DIARIZATION_MODELS_DIR="$WORK/models"
export DIARIZATION_SERVER_UNDER_TEST="$WORK/bin/diarization_server_cuda"
export ATTACK_DEVICE=${ATTACK_DEVICE:-cuda:0}
export ATTACK_VICTIM_BOUND_S=${ATTACK_VICTIM_BOUND_S:-1}
timeout "${ATTACK_TIMEOUT_S:-560}" "$WORK/bin/attack_test" --gtest_color=no \
  ${GTEST_FILTER:+--gtest_filter="$GTEST_FILTER"} >"$LOG" 2>&1
rc=$?
grep -E "^\[ RUN|^victim:|^bomb |^RSS |drain with|fast stream:|long uploads|SIGTERM to exit|Failure|Expected|Which is|came more than|^\[       OK|^\[  FAILED|^\[  PASSED" "$LOG" | head -120
echo "rc=$rc"
exit $rc
