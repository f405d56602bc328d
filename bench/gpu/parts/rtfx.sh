#!/usr/bin/env bash
# Part "rtfx" of bench/gpu/round.sh: rtfx_main in the server's
# configuration (its backend flags module and defaults), about an hour of
# the fixture recordings, real segmentation weights when packed (so the
# clustering sees a trained segmentation's output). One JSON line per run.
# MODES ("accurate fast"), HOURS (1), REPEATS (2); FLAGS: backend flags of
# this run (the server's own, e.g. --pipelines_per_device=2), VARIANT its name
# (bench/gpu/ab.sh sets both). ENGINE_CACHE (default a file per binary under
# /tmp, kept across the runs of one machine start, as the GPU deployment
# keeps it on a volume; empty: none) is passed as --cuda_conv_engine_cache.
set -uo pipefail
: "${WORK:?run through bench/gpu/round.sh}"
real=()
[[ -f "$WORK/real/segmentation.safetensors" ]] &&
  real=(--segmentation_weights "$WORK/real/segmentation.safetensors")
ENGINE_CACHE=${ENGINE_CACHE-/tmp/rtfx_engines_$(cksum <"$B/rtfx_main" | cut -d' ' -f1).tsv}
device=()
[[ $DEVICE == cuda* ]] && device=(--device="$DEVICE")
i=0
for mode in ${MODES:-accurate fast}; do
  i=$((i + 1))
  log=$PART_OUT/${VARIANT:-default}_${mode}_$i.log
  # shellcheck disable=SC2086  # FLAGS are words by design
  TMPDIR="$WORK/tmp" timeout "${RTFX_TIMEOUT_S:-300}" "$B/rtfx_main" --data "$WORK/data" \
    --plda "$WORK/plda" --hours "${HOURS:-1}" --mode "$mode" --repeats "${REPEATS:-2}" \
    ${device[@]+"${device[@]}"} ${ENGINE_CACHE:+--cuda_conv_engine_cache="$ENGINE_CACHE"} \
    ${real[@]+"${real[@]}"} ${FLAGS:-} >"$log" 2>&1
  rc=$?
  # rtfx_main's own result line, with the part, the variant and the rc.
  python3 - "$log" "$rc" "${VARIANT:-}" "${FLAGS:-}" "$mode" <<'PY'
import json, sys
log, rc, variant, flags, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
r = None
for line in open(log, errors="replace"):
    if line.startswith('{"bench": "rtfx_main"'):
        r = json.loads(line)
out = {"part": "rtfx", "variant": variant, "mode": mode, "rc": rc, "flags": flags}
if r:
    r.pop("bench", None); r.pop("mode", None)
    out.update(r)
print(json.dumps(out))
PY
  grep -E "per pass \(mean|RTFx end to end|LSTM recurrence|arena: reserved" "$log" | head -4 | sed 's/^/  /'
  [[ $rc == 0 ]] || tail -3 "$log" | sed 's/^/  /'
done
