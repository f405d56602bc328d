#!/usr/bin/env bash
# On the GPU machine: rtfx_main of the payload (B) against a baseline build
# (A), alternated A, B, A, B, ... in one call, so that a change is measured
# against its baseline on the same machine within minutes. Both run the same
# flags (rtfx_default.sh, as ratio_ab.sh's "ours": 1 h, TF32, batch 32,
# overlapped, real segmentation weights), each with its own conv engine
# cache, warmed by one unmeasured run first. Prints each run's stage times and RTFx, and B/A per
# pair.
#
#   here:  tools/device/pack.sh (REAL_MODELS_DIR set); copy the baseline's
#          rtfx_main to .device/baseline/rtfx_main
#   run:   carry [".device"], command "bash bench/gpu/rtfx_ab.sh"
#   PAIRS (2), REPEATS (2, passes per run), FLAGS (extra rtfx_main flags).
set -uo pipefail
cd "$(dirname "$0")/../.."
LOGS=${OUT:-$(pwd)/gpu-logs}/rtfx_ab
mkdir -p "$LOGS"
source bench/gpu/rtfx_default.sh
rtfx_unpack_payload rtfx_ab.sh
rtfx_take_baseline rtfx_ab.sh

run() {  # build (A|B), log name, passes
  local bin=$WORK/bin/rtfx_main
  [[ $1 == A ]] && bin=$WORK/bin/rtfx_main_baseline
  # shellcheck disable=SC2086
  rtfx_default "$bin" "$LOGS/$2.log" "$3" "$WORK/conv_engines_$1.tsv" ${FLAGS:-}
}

run A warm_A 1
run B warm_B 1
echo "warm-up: A $(rtfx_of "$LOGS/warm_A.log"), B $(rtfx_of "$LOGS/warm_B.log")"
ratios=()
for i in $(seq "${PAIRS:-2}"); do
  for b in A B; do
    run "$b" "${b}_$i" "${REPEATS:-2}"
    echo "run $i $b: $(grep -o 'per pass.*' "$LOGS/${b}_$i.log")"
    echo "         $(grep -o 'fbank alone.*' "$LOGS/${b}_$i.log"); RTFx $(rtfx_of "$LOGS/${b}_$i.log")"
  done
  a=$(rtfx_of "$LOGS/A_$i.log"); bb=$(rtfx_of "$LOGS/B_$i.log")
  if [[ -n "$a" && -n "$bb" ]]; then
    ratios+=("$(python3 -c "print(f'{$bb / $a:.3f}')")")
  fi
done
echo "B/A RTFx per pair: ${ratios[*]:-none}"
grep -h "arena: reserved" "$LOGS/A_1.log" "$LOGS/B_1.log" 2>/dev/null | sed 's/^/  /'
