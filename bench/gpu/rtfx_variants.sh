#!/usr/bin/env bash
# On the GPU machine: one build's rtfx_main (the payload's) under several
# flag sets, alternated round by round in one call, so that run-time
# options (stream priorities, kernel choices, batch sizes) are compared on
# the same machine within minutes. Every variant runs the default
# configuration of rtfx_default.sh plus its own flags, with one conv engine
# cache shared by all of them (the embedding trunk's shapes do not change
# with these flags), warmed by one unmeasured run first.
#
#   here:  tools/device/pack.sh (REAL_MODELS_DIR set)
#   run:   carry [".device/payload.tar.xz"], command
#          VARIANTS=$'base|\nstem|--direct_stem' \
#            bash bench/gpu/rtfx_variants.sh
#   VARIANTS: one "name|flags" per line (the first is the baseline of the
#   ratios); ROUNDS (2), REPEATS (2, passes per run); ENV_<name> is put in
#   front of that variant's command (e.g. ENV_t1="OPENBLAS_NUM_THREADS=1").
#   CACHE_PER_VARIANT=1 gives each variant an engine cache of its own, a
#   copy of the cache the warm-up run left, for flags that change which
#   engines may run (--embedding_workspace_mb, --graph_workspace_cap_mb): a
#   cached engine that does not fit is chosen again at that variant's load
#   (outside the timed passes) without changing the other variants' choices.
#
# Prints each run's per-pass line, the host steps and RTFx, then per
# variant the RTFx of every round and its ratio to the first variant's in
# the same round.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOGS=${OUT:-$(pwd)/gpu-logs}/rtfx_variants
mkdir -p "$LOGS"
source bench/gpu/rtfx_default.sh
rtfx_unpack_payload rtfx_variants.sh

VARIANTS=${VARIANTS:-"base|"}
names=()
declare -A flags
while IFS= read -r line; do
  [[ -z "$line" ]] && continue
  name=${line%%|*}
  [[ "$name" =~ ^[A-Za-z0-9_]+$ ]] || { echo "bad variant name '$name'"; exit 2; }
  names+=("$name")
  flags[$name]=${line#*|}
done <<<"$VARIANTS"
CACHE=$WORK/conv_engines.tsv

run() {  # variant, log name, passes
  local envvar="ENV_$1"
  (
    # shellcheck disable=SC2086
    [[ -n "${!envvar:-}" ]] && export ${!envvar}
    # The warm-up's cache until the variants get their copies.
    cache=$CACHE
    [[ -f "$WORK/conv_engines_$1.tsv" ]] && cache=$WORK/conv_engines_$1.tsv
    # shellcheck disable=SC2086
    rtfx_default "$WORK/bin/rtfx_main" "$LOGS/$2.log" "$3" "$cache" ${flags[$1]}
  )
}

run "${names[0]}" warm 1
if [[ "${CACHE_PER_VARIANT:-0}" == 1 ]]; then
  for n in "${names[@]}"; do
    [[ -f "$WORK/conv_engines_$n.tsv" ]] || cp "$CACHE" "$WORK/conv_engines_$n.tsv" 2>/dev/null
  done
fi
echo "warm-up (${names[0]}): RTFx $(rtfx_of "$LOGS/warm.log")"
declare -A rtfx
for r in $(seq "${ROUNDS:-2}"); do
  for n in "${names[@]}"; do
    run "$n" "${n}_$r" "${REPEATS:-2}"
    log=$LOGS/${n}_$r.log
    rtfx[$n,$r]=$(rtfx_of "$log")
    echo "round $r $n: $(grep -o 'per pass (mean.*' "$log")"
    echo "    $(grep -o 'of the clustering.*' "$log")"
    echo "    $(grep -o 'of the AHC.*' "$log")"
    echo "    $(grep -o 'GPU linkage: .*' "$log")"
    echo "    $(grep -o 'device busy.*' "$log")"
    echo "    $(grep -o 'LSTM recurrence[^;]*' "$log" | head -1); RTFx ${rtfx[$n,$r]:-none}"
    echo "    $(grep -o 'arena: reserved.*' "$log" | head -1)"
    [[ -n "${rtfx[$n,$r]}" ]] || tail -3 "$log" | sed 's/^/    /'
  done
done
echo "summary (RTFx per round; ratio to ${names[0]} in the same round):"
for n in "${names[@]}"; do
  envvar="ENV_$n"
  line="  $n [${flags[$n]}${!envvar:+ env ${!envvar}}]:"
  for r in $(seq "${ROUNDS:-2}"); do
    a=${rtfx[${names[0]},$r]:-}; b=${rtfx[$n,$r]:-}
    if [[ -n "$a" && -n "$b" ]]; then
      line+=" $b ($(python3 -c "print(f'{$b / $a:.3f}')"))"
    else
      line+=" ${b:-none}"
    fi
  done
  echo "$line"
done
grep -h "arena: reserved" "$LOGS/${names[0]}_1.log" 2>/dev/null | sed 's/^/  /'
