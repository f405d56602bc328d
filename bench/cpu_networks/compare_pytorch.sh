#!/usr/bin/env bash
# CPU networks vs PyTorch (pyannote.audio's own modules), same machine, same
# thread count, same windows and masks, same run. Prints both and the ratio.
#
#   bench/cpu_networks/compare_pytorch.sh [--threads 2] [--batch 4]
#       [--repeats 3] [--rounds 2]
#
# The two implementations run alternately for --rounds rounds and the best
# time of each is kept, so a load change on a shared machine hits both.
#
# Needs the reference venv (bash tools/reference/setup.sh →
# .venv-reference). BAZEL_OUTPUT_BASE selects a bazel output base.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
THREADS=2 BATCH=4 REPEATS=3 ROUNDS=2
while (($#)); do
  case "$1" in
    --threads) THREADS="$2"; shift 2 ;;
    --batch) BATCH="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
PY="$ROOT/.venv-reference/bin/python"
[[ -x "$PY" ]] || { echo "missing $PY: run bash tools/reference/setup.sh" >&2; exit 1; }
BAZEL=(bazel)
[[ -n "${BAZEL_OUTPUT_BASE:-}" ]] && BAZEL=(bazel "--output_base=$BAZEL_OUTPUT_BASE")
"${BAZEL[@]}" build -c opt //bench/cpu_networks:cpu_networks_bench //tools:make_random_models >&2
BIN="$("${BAZEL[@]}" info -c opt bazel-bin 2>/dev/null)"
MODELS="$(mktemp -d)/models"
trap 'rm -rf "$(dirname "$MODELS")"' EXIT
"$BIN/tools/make_random_models/make_random_models" --out "$MODELS" --seed 1 >&2

CPP="" PYT=""
for ((r = 1; r <= ROUNDS; r++)); do
  echo "== round $r: C++ (oneDNN), OMP_NUM_THREADS=$THREADS, load $(cut -d' ' -f1-3 /proc/loadavg)"
  out="$(OMP_NUM_THREADS=$THREADS "$BIN/bench/cpu_networks/cpu_networks_bench" \
    --models "$MODELS" --threads "$THREADS" --batch "$BATCH" --repeats "$REPEATS")"
  echo "$out"; CPP+="$out"$'\n'
  echo "== round $r: PyTorch, torch.set_num_threads($THREADS), load $(cut -d' ' -f1-3 /proc/loadavg)"
  out="$(OMP_NUM_THREADS=$THREADS "$PY" bench/cpu_networks/pytorch_bench.py \
    --models "$MODELS" --threads "$THREADS" --batch "$BATCH" --repeats "$REPEATS")"
  echo "$out"; PYT+="$out"$'\n'
done

# Best (smallest) value of a RESULT field over the rounds.
field() { grep '^RESULT' <<<"$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | sort -g | head -1; }
python3 - "$(field "$CPP" seg_ms)" "$(field "$CPP" emb_ms)" \
  "$(field "$PYT" seg_ms)" "$(field "$PYT" emb_ms)" "$(field "$PYT" emb_multi_ms)" \
  "$(field "$CPP" seg_cpu_ms)" "$(field "$CPP" emb_cpu_ms)" \
  "$(field "$PYT" seg_cpu_ms)" "$(field "$PYT" emb_cpu_ms)" "$(field "$PYT" emb_multi_cpu_ms)" <<'PYEOF'
import sys
cs, ce, ps, pe, pm, ccs, cce, pcs, pce, pcm = map(float, sys.argv[1:])
for label, (a, b, c, d, e) in (("wall", (cs, ce, ps, pe, pm)),
                               ("process CPU", (ccs, cce, pcs, pce, pcm))):
    print("== %s time per window (ms, best of the rounds): C++ seg %.1f emb %.1f | "
          "PyTorch seg %.1f emb(pipeline, 3 trunks) %.1f emb(multi-mask) %.1f"
          % (label, a, b, c, d, e))
    print("   speed-up: segmentation %.2fx; embedding vs pyannote's pipeline calls %.2fx, "
          "vs its multi-mask path %.2fx" % (c / a, d / b, e / b))
    print("   per minute of audio (60 windows): C++ %.1f s, PyTorch as the pipeline runs it "
          "%.1f s -> %.2fx; PyTorch with trunk sharing %.1f s -> %.2fx"
          % (0.06 * (a + b), 0.06 * (c + d), (c + d) / (a + b), 0.06 * (c + e), (c + e) / (a + b)))
PYEOF
