#!/usr/bin/env bash
# pyannote.audio's own community-1 pipeline on the GPU machine, on the same
# hour of audio and the same weights as rtfx_main's REALSEG configuration
# (real segmentation-3.0, rtfx_main's seed-1 random embedding, real PLDA):
# the baseline for the CUDA backend's RTFx.
#
#   here:  tools/device/fetch_wheels.sh; tools/device/pack.sh (REAL_MODELS_DIR set)
#   run:   carry [".device", ".whl"], command "bash bench/gpu/pyannote_baseline.sh"
#
# The wheels (.whl) go to /tmp/site. The model directory is assembled from the
# payload pack.sh made: real/segmentation.safetensors, plda/, and the
# embedding weights rtfx_main writes before it touches the GPU (same function,
# same seed as its benchmark); their sha256 are checked. BASELINE_MODELS=DIR
# uses a ready model directory instead. Logs and results go to $OUT/baseline.
# BASELINE_HOURS (1), BASELINE_TIMEOUT (s, 360) and BASELINE_ARGS (extra
# flags for pyannote_baseline.py) tune it; BASELINE_PYTHON, BASELINE_DEVICE=cpu
# and BASELINE_SKIP_PIP=1 let it run here, with .venv-reference, for a check.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOGS=${OUT:-$(pwd)/gpu-logs}/baseline
mkdir -p "$LOGS"
# Expected weights: tools/make_random_models seed 1 and segmentation-3.0 as
# converted by tools/convert (the hashes of /tmp/modelfmt-realseg's manifest).
EMB_SHA=90c30063cb0f057b05fb1d8b942a9302d2cee1228554d7ed520632944e483c84
SEG_SHA=069f99fab9b93080ff93a986e34194e347ba60eb2390474cdaf0d7f0abe096ae

PY=${BASELINE_PYTHON:-python3}
if [[ "${BASELINE_SKIP_PIP:-0}" != 1 ]]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl >"$LOGS/pip.log" 2>&1 ||
    { echo "pyannote_baseline.sh: wheel install failed:"; tail -20 "$LOGS/pip.log"; exit 2; }
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

WORK=$(mktemp -d)
tar -C "$WORK" -xJf .device/payload.tar.xz ||
  { echo "pyannote_baseline.sh: no .device/payload.tar.xz; run tools/device/pack.sh"; exit 2; }
MODELS=${BASELINE_MODELS:-}
if [[ -z "$MODELS" ]]; then
  # rtfx_main writes $TMPDIR/rtfx_random_models before it opens the GPU;
  # --device 99 makes it stop right there.
  mkdir -p "$WORK/tmp"
  TMPDIR="$WORK/tmp" LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout 120 "$WORK/bin/rtfx_main" --data "$WORK/data" --plda "$WORK/plda" --hours 0.001 \
    --device 99 >"$LOGS/make_models.log" 2>&1
  MODELS="$WORK/models"
  mkdir -p "$MODELS/plda"
  cp "$WORK/tmp/rtfx_random_models/embedding.safetensors" "$MODELS/" ||
    { echo "pyannote_baseline.sh: rtfx_main wrote no model directory:"; cat "$LOGS/make_models.log"; exit 2; }
  cp "$WORK/real/segmentation.safetensors" "$MODELS/" ||
    { echo "pyannote_baseline.sh: payload lacks real/segmentation.safetensors (pack.sh needs REAL_MODELS_DIR)"; exit 2; }
  cp "$WORK/plda/plda.npz" "$WORK/plda/xvec_transform.npz" "$MODELS/plda/"
  for pair in "embedding:$EMB_SHA" "segmentation:$SEG_SHA"; do
    name=${pair%%:*}; want=${pair#*:}
    got=$(sha256sum "$MODELS/$name.safetensors" | cut -d' ' -f1)
    [[ "$got" == "$want" ]] ||
      { echo "pyannote_baseline.sh: $name.safetensors sha256 $got, expected $want"; exit 2; }
  done
fi

# shellcheck disable=SC2086
timeout "${BASELINE_TIMEOUT:-360}" "$PY" bench/gpu/pyannote_baseline.py \
  --models "$MODELS" --data "$WORK/data" --out "$LOGS" --hours "${BASELINE_HOURS:-1}" \
  --device "${BASELINE_DEVICE:-cuda}" ${BASELINE_ARGS:-} >"$LOGS/stdout.log" 2>"$LOGS/stderr.log"
rc=$?
echo "== pyannote_baseline rc=$rc"
if [[ $rc == 0 ]]; then
  tail -1 "$LOGS/stdout.log"
else
  tail -30 "$LOGS/stderr.log"
fi
rm -rf "$WORK"
exit $rc
