#!/usr/bin/env bash
# Part "ratio" of bench/gpu/round.sh: rtfx_main (the rtfx part, accurate,
# the server's configuration) against pyannote.audio's own community-1
# pipeline (bench/gpu/pyannote_baseline.py) on the same hour and the same
# weights (real segmentation-3.0 from real/, the seed-1 random embedding, the
# real PLDA), as alternating pairs, because pyannote's own wall time varies
# by >10 % from run to run. Needs kits bench + ratio (the wheels). PAIRS (3);
# BASELINE_DEVICE (cuda), BASELINE_PYTHON (python3), BASELINE_TIMEOUT (300 s)
# and BASELINE_SKIP_PIP=1 let it run here against a ready environment.
set -uo pipefail
: "${WORK:?run through bench/gpu/round.sh}"
PY=${BASELINE_PYTHON:-python3}
if [[ "${BASELINE_SKIP_PIP:-0}" != 1 ]]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$WORK/site" "$WORK"/wheels/*.whl >"$PART_OUT/pip.log" 2>&1 ||
    { echo "  wheel install failed (kit ratio packed?)"; tail -5 "$PART_OUT/pip.log"; exit 2; }
  export PYTHONPATH=$WORK/site${PYTHONPATH:+:$PYTHONPATH}
fi
# The same weights as rtfx_main's: make_random_models seed 1 (rtfx_main's
# own random directory) with the real segmentation.
MODELS=$WORK/ratio_models
seg=()
[[ -f "$WORK/real/segmentation.safetensors" ]] &&
  seg=(--segmentation_from "$WORK/real/segmentation.safetensors")
"$B/make_random_models" --out "$MODELS" --seed 1 --plda_from "$WORK/plda" ${seg[@]+"${seg[@]}"} \
  >"$PART_OUT/models.log" 2>&1 || { echo "  make_random_models failed"; exit 2; }
for i in $(seq "${PAIRS:-3}"); do
  PART_OUT=$PART_OUT MODES=accurate REPEATS=1 VARIANT=ours bash bench/gpu/parts/rtfx.sh \
    >"$PART_OUT/ours_$i.out" 2>&1
  ours=$(python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]; print(r[-1].get('rtfx', 'nan'))" "$PART_OUT/ours_$i.out" 2>/dev/null)
  mkdir -p "$PART_OUT/theirs_$i"
  timeout "${BASELINE_TIMEOUT:-300}" "$PY" bench/gpu/pyannote_baseline.py --models "$MODELS" \
    --data "$WORK/data" --out "$PART_OUT/theirs_$i" --hours "${BASELINE_HOURS:-1}" \
    --device "${BASELINE_DEVICE:-cuda}" ${BASELINE_ARGS:-} >"$PART_OUT/theirs_$i.log" 2>&1
  theirs=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['rtfx'])" \
    "$PART_OUT/theirs_$i/pyannote_baseline.json" 2>/dev/null || echo nan)
  echo "{\"part\": \"ratio\", \"pair\": $i, \"ours_rtfx\": ${ours:-nan}, \"pyannote_rtfx\": ${theirs:-nan}}" |
    sed 's/: nan/: null/g'
  echo "  pair $i: ours ${ours:-FAILED} pyannote ${theirs:-FAILED}"
done
# The median ratio, from this part's own JSON lines.
python3 - "$PART_OUT" "${PAIRS:-3}" <<'PY'
import json, statistics, sys, glob
pairs = []
for i in range(1, int(sys.argv[2]) + 1):
    try:
        ours = [json.loads(l) for l in open(f"{sys.argv[1]}/ours_{i}.out") if l.startswith("{")][-1].get("rtfx")
        theirs = json.load(open(f"{sys.argv[1]}/theirs_{i}/pyannote_baseline.json"))["rtfx"]
    except (OSError, ValueError, IndexError, KeyError):
        continue
    if ours and theirs:
        pairs.append(ours / theirs)
print(json.dumps({"part": "ratio", "step": "median", "pairs": len(pairs),
                  "ratio_median": round(statistics.median(pairs), 3) if pairs else None,
                  "ratio_min": round(min(pairs), 3) if pairs else None,
                  "ratio_max": round(max(pairs), 3) if pairs else None}))
PY
