#!/usr/bin/env bash
# Part "multi_gpu" of bench/gpu/round.sh: the streams part's accurate step
# on 1, 2, 4, 8 GPUs of the machine (COUNTS, those that exist), 32 streams
# of 5 minutes per GPU, ROUNDS (2) rounds, and the scaling of the median
# aggregate RTFx against one GPU (target 0.9 × GPUs). One JSON line per run
# and one for the scaling.
set -uo pipefail
: "${WORK:?run through bench/gpu/round.sh}"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
[[ $DEVICE == cpu ]] && gpus=1  # a rehearsal: the CPU device once
counts=()
for k in ${COUNTS:-1 2 4 8}; do [[ $k -le $gpus ]] && counts+=("$k"); done
echo "  GPUs: $gpus; counts: ${counts[*]}"
for round in $(seq "${ROUNDS:-2}"); do
  for k in "${counts[@]}"; do
    devs=$(seq -s, 0 $((k - 1)) | sed 's/\([0-9]\+\)/cuda:\1/g')
    [[ $DEVICE == cpu ]] && devs=cpu
    mkdir -p "$PART_OUT/k${k}_r$round"
    PART_OUT="$PART_OUT/k${k}_r$round" DEVICES="$devs" STREAMS=$((${STREAMS_PER_GPU:-32} * k)) \
      MINUTES=${MINUTES:-5} SKIP_LIVE=1 VARIANT="k$k" \
      SERVER_FLAGS="--max_backlog_audio_s=$((32 * k * 300 + 600)) --host_threads=$((4 + 4 * k)) --work_threads=$((2 + 2 * k))" \
      bash bench/gpu/parts/streams.sh >"$PART_OUT/k${k}_r$round.log" 2>&1
    grep '^{"part": "streams", "variant": "k[0-9]*", "step": "accurate"' "$PART_OUT/k${k}_r$round.log" |
      sed "s/\"part\": \"streams\"/\"part\": \"multi_gpu\", \"gpus\": $k, \"round\": $round/"
  done
done | tee "$PART_OUT/runs.jsonl"
python3 - "$PART_OUT/runs.jsonl" <<'PY'
import json, sys, collections, statistics
runs = collections.defaultdict(list)
for l in open(sys.argv[1]):
    if l.startswith("{"):
        r = json.loads(l)
        runs[r["gpus"]].append(r["rtfx"])
base = statistics.median(runs[1]) if runs.get(1) else None
for k in sorted(runs):
    m = statistics.median(runs[k])
    print(json.dumps({"part": "multi_gpu", "step": "scaling", "gpus": k, "rtfx_median": m,
                      "scaling": round(m / base, 3) if base else None, "target": round(0.9 * k, 2)}))
PY
