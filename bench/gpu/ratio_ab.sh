#!/usr/bin/env bash
# On the GPU machine: the RTFx ratio against pyannote.audio, measured as
# alternating pairs (ours, pyannote, ours, pyannote, ...), because
# pyannote's own wall time varies by >10 % from run to run. Ours:
# rtfx_main, default TF32 embeddings (default trunk API and segmentation
# batch), embedding batch 32, stages overlapped, real
# segmentation weights (gpu_tests.sh's REALSEG configuration). Theirs:
# pyannote_baseline.sh (same hour of audio, same weights). Prints each pair,
# and the median and range of the ratios.
#
#   here:  tools/device/fetch_wheels.sh; tools/device/pack.sh (REAL_MODELS_DIR set)
#   run:   carry [".device/payload.tar.xz", ".whl"], command "bash bench/gpu/ratio_ab.sh"
#   PAIRS (3) sets the number of pairs.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOGS=${OUT:-$(pwd)/gpu-logs}/ratio_ab
mkdir -p "$LOGS"
source bench/gpu/rtfx_default.sh
rtfx_unpack_payload ratio_ab.sh
for i in $(seq "${PAIRS:-3}"); do
  rtfx_default "$WORK/bin/rtfx_main" "$LOGS/ours_$i.log" 1 "$WORK/conv_engines.tsv"
  ours=$(rtfx_of "$LOGS/ours_$i.log")
  # The wheels are installed by the first baseline run only.
  skip=0; [[ $i -gt 1 ]] && skip=1
  OUT="$LOGS/pair_$i" BASELINE_SKIP_PIP=$skip PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} \
    BASELINE_TIMEOUT=300 bash bench/gpu/pyannote_baseline.sh >"$LOGS/theirs_$i.log" 2>&1
  theirs=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['rtfx'])" \
    "$LOGS/pair_$i/baseline/pyannote_baseline.json" 2>/dev/null)
  echo "pair $i: ours ${ours:-FAILED} pyannote ${theirs:-FAILED}"
  echo "$i ${ours:-nan} ${theirs:-nan}" >>"$LOGS/pairs.txt"
done
python3 - "$LOGS/pairs.txt" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
ratios = [float(o) / float(t) for _, o, t in rows if o != "nan" and t != "nan"]
ours = [float(o) for _, o, _ in rows if o != "nan"]
theirs = [float(t) for _, _, t in rows if t != "nan"]
if ratios:
    print(f"ours RTFx median {statistics.median(ours):.1f} (range {min(ours):.1f}-{max(ours):.1f}); "
          f"pyannote median {statistics.median(theirs):.1f} (range {min(theirs):.1f}-{max(theirs):.1f})")
    print(f"ratio per pair: {', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}x")
else:
    print("no complete pair")
PY
rm -rf "$WORK"
