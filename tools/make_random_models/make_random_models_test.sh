#!/usr/bin/env bash
# Runs the real binary twice with one seed and once with another: the same
# seed must give byte-identical directories, another seed different weights
# (and the same PLDA files).
set -euo pipefail
tool="${TEST_SRCDIR}/diarization/tools/make_random_models/make_random_models"
ws="$(dirname "$(readlink -f "${TEST_SRCDIR}/diarization/tools/make_random_models/make_random_models_test.sh")")/../.."
plda="${DIARIZATION_MODELS_DIR:-${ws}/../shared/models}/community-1-plda"
out="${TEST_TMPDIR}"
"${tool}" --out "${out}/a" --seed 7 --plda_from "${plda}"
"${tool}" --out "${out}/b" --seed 7 --plda_from "${plda}"
"${tool}" --out "${out}/c" --seed 8 --plda_from "${plda}"
for f in manifest.json segmentation.safetensors embedding.safetensors \
         plda/xvec_transform.npz plda/plda.npz; do
  cmp "${out}/a/${f}" "${out}/b/${f}"
done
cmp "${plda}/plda.npz" "${out}/a/plda/plda.npz"
cmp "${plda}/xvec_transform.npz" "${out}/a/plda/xvec_transform.npz"
if cmp -s "${out}/a/segmentation.safetensors" "${out}/c/segmentation.safetensors"; then
  echo "FAIL: seeds 7 and 8 gave the same segmentation weights" >&2; exit 1
fi
if cmp -s "${out}/a/embedding.safetensors" "${out}/c/embedding.safetensors"; then
  echo "FAIL: seeds 7 and 8 gave the same embedding weights" >&2; exit 1
fi
grep -q '"random_weights": true' "${out}/a/manifest.json"
grep -q 'NOT a trained model' "${out}/a/manifest.json"
# --segmentation_from: seed 8's directory with seed 7's segmentation file
# gives seed 7's segmentation tensors (the data after the safetensors
# header; the header's metadata says where they came from) and seed 8's
# embedding.
"${tool}" --out "${out}/d" --seed 8 --plda_from "${plda}" \
  --segmentation_from "${out}/a/segmentation.safetensors"
tensor_data() {  # the bytes after a safetensors file's header
  python3 -c 'import sys, struct
b = open(sys.argv[1], "rb").read()
sys.stdout.buffer.write(b[8 + struct.unpack("<Q", b[:8])[0]:])' "$1"
}
cmp <(tensor_data "${out}/a/segmentation.safetensors") \
    <(tensor_data "${out}/d/segmentation.safetensors")
cmp "${out}/c/embedding.safetensors" "${out}/d/embedding.safetensors"
grep -q "copied from ${out}/a/segmentation.safetensors" "${out}/d/manifest.json"
if "${tool}" --out "${out}/e" --plda_from "${plda}" \
     --segmentation_from "${out}/a/embedding.safetensors" 2>/dev/null; then
  echo "FAIL: an embedding file was taken as segmentation weights" >&2; exit 1
fi
echo "make_random_models_test: 2 passed, 0 failed"
