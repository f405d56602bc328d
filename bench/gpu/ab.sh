#!/usr/bin/env bash
# The A/B driver of the GPU harness: one part (rtfx by default, or streams,
# live, ...) under several named variants, alternated round by round in one
# call (A B C A B C ...) through bench/gpu/round.sh (the payload unpacked and
# the environment set once), so that variants are compared on the same
# machine within minutes; then, from the JSON result lines, each variant's
# figure per round and its ratio to the first variant's in the same round,
# and the median ratio.
#
#   run: carry [".device/payload.tar.xz"], command
#        "VARIANTS=$'base|\nppd2|--pipelines_per_device=2' bash bench/gpu/ab.sh"
#
# VARIANTS: one "name|flags[|bin dir]" per line: the flags are the backend
# or server flags of that variant (the server's own names,
# engine/runtime/backend_flags.h); a bin dir (e.g. a baseline build unpacked
# under .device/baseline/bin) replaces the payload's binaries. The first
# variant is the baseline of the ratios. PART (rtfx), ROUNDS (2), METRIC
# (rtfx), SELECT (a "key=value" every counted line must have, e.g.
# step=accurate or mode=accurate; default: for rtfx mode=accurate, for
# streams step=accurate, for live step=live). Other variables go to the part
# (MODES, HOURS, REPEATS, STREAMS, MINUTES...). Output: $OUT as round.sh's.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$(pwd)/gpu-logs}
PART=${PART:-rtfx}
METRIC=${METRIC:-rtfx}
case $PART in
  rtfx) SELECT=${SELECT:-mode=accurate}; export MODES=${MODES:-accurate} ;;
  streams) SELECT=${SELECT:-step=accurate} ;;
  live) SELECT=${SELECT:-step=live}; METRIC=${METRIC_LIVE:-final_p99_ms} ;;
  *) SELECT=${SELECT:-} ;;
esac
VARIANTS=${VARIANTS:-"base|"}
names=() parts=""
while IFS= read -r line; do
  [[ -z "$line" ]] && continue
  IFS='|' read -r name flags bin <<<"$line"
  [[ "$name" =~ ^[A-Za-z0-9_]+$ ]] || { echo "ab.sh: bad variant name '$name'"; exit 2; }
  names+=("$name")
  export "VARIANT_FLAGS_$name=$flags"
  [[ -n "${bin:-}" ]] && export "VARIANT_BIN_$name=$(cd "$bin" && pwd)"
done <<<"$VARIANTS"
for r in $(seq "${ROUNDS:-2}"); do
  for n in "${names[@]}"; do parts+=" $PART@$n"; done
done
OUT=$OUT PARTS="$parts" BUDGET_S=${BUDGET_S:-570} bash bench/gpu/round.sh
rc=$?
python3 - "$OUT/results.jsonl" "$METRIC" "$SELECT" "${names[@]}" <<'PY'
import json, statistics, sys
path, metric, select, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
key, _, want = select.partition("=")
runs = {n: [] for n in names}  # per variant, in the order run (= rounds)
for line in open(path):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("variant") not in runs or (key and str(r.get(key)) != want):
        continue
    runs[r["variant"]].append(r.get(metric))
base = runs[names[0]]
print(f"A/B summary: {metric}{' where ' + select if select else ''}; ratio to {names[0]} in the same round")
for n in names:
    cells, ratios = [], []
    for i, v in enumerate(runs[n]):
        b = base[i] if i < len(base) else None
        if v is not None and b:
            ratios.append(v / b)
            cells.append(f"{v:g} ({v / b:.3f})")
        else:
            cells.append(f"{v}")
    med = f"; median ratio {statistics.median(ratios):.3f}" if ratios else ""
    print(f"  {n}: {' '.join(cells) or 'no result'}{med}")
    print(json.dumps({"part": "ab", "variant": n, "metric": metric, "values": runs[n],
                      "median_ratio": round(statistics.median(ratios), 4) if ratios else None}))
PY
exit $rc
