#!/usr/bin/env bash
# Part "soak" of bench/gpu/round.sh: the bounded soak of the real server
# (bench/soak/soak.sh: paced streams restarting when their result is in,
# SIGTERM, drain, exit 0) on the payload's server. Two steps: $STREAMS (64)
# streams × $MINUTES (5) minutes at real time, then 64 × 2 minutes at 10×.
# SOAK_STEPS ("realtime fast") picks steps. One JSON line per step.
set -uo pipefail
: "${WORK:?run through bench/gpu/round.sh}"
"$B/make_random_models" --out "$WORK/soak_models" --plda_from "$WORK/plda" >/dev/null || exit 1
dev=$DEVICE
[[ $dev == cuda ]] && dev=cuda:0
step() {  # name audio streams minutes speed
  local name=$1 rc
  BIN_DIR="$B" SERVER_NAME=$(basename "$SERVER_BIN") bash bench/soak/soak.sh --device "$dev" \
    --models "$WORK/soak_models" --audio "$WORK/data/$2" --streams "$3" --minutes "$4" \
    --speed "$5" --connections 8 >"$PART_OUT/$name.json" 2>"$PART_OUT/$name.err"
  rc=$?
  python3 - "$PART_OUT/$name.json" "$name" "$rc" <<'PY'
import json, sys
path, name, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(path).read()
summary = {}
start = text.rfind("\n{")
try:
    summary = json.loads(text[start + 1 if start >= 0 else 0:])
except ValueError:
    pass
out = {"part": "soak", "step": name, "rc": rc}
out.update({k: v for k, v in summary.items() if not isinstance(v, (dict, list))})
print(json.dumps(out))
PY
  tail -2 "$PART_OUT/$name.err" | sed 's/^/  /'
}
for s in ${SOAK_STEPS:-realtime fast}; do
  case $s in
    realtime) step realtime sample.wav "${STREAMS:-64}" "${MINUTES:-5}" 1 ;;
    fast) step fast four_speaker.wav "${FAST_STREAMS:-64}" "${FAST_MINUTES:-2}" 10 ;;
  esac
done
