#!/usr/bin/env bash
# Runs the cluster tool like `bazel run` would (BUILD_WORKING_DIRECTORY set,
# relative paths) on findit fixtures and compares with pyannote's RTTM.
set -euo pipefail
tool="$PWD/tools/cluster/cluster"
data="${DIARIZATION_TEST_DATA:-}"
if [[ -z "$data" ]]; then
  # The source tree's ../shared/data (test_data.h's default).
  src="$(cd "$(dirname "$(readlink -f WORKSPACE)")" && pwd)"
  data="$src/../shared/data"
  models="$src/../shared/models"
else
  models="${DIARIZATION_MODELS_DIR:-$data/../models}"
fi
[[ -d "$data/findit-dia-parity" ]] || { echo "missing golden data under $data" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$data/findit-dia-parity/02_pyannote_sample" "$work/clip"
for clip in 01_dialogue 02_pyannote_sample 03_dual_speaker 04_three_speaker 05_four_speaker; do
  ( cd "$work" && BUILD_WORKING_DIRECTORY="$work" DIARIZATION_MODELS_DIR="$models" \
      "$tool" --fixture "$data/findit-dia-parity/$clip" --out "out_$clip.rttm" )
  cmp "$work/out_$clip.rttm" "$data/findit-dia-parity/$clip/reference.rttm"
done
# Relative --fixture and --plda, uri from reference.rttm, then --uri.
( cd / && BUILD_WORKING_DIRECTORY="$work" "$tool" --fixture clip --out rel.rttm \
    --plda "$models/community-1-plda" --uri other )
grep -q "^SPEAKER other 1 " "$work/rel.rttm"
# Contradictory hints are a clear error, not a crash.
if BUILD_WORKING_DIRECTORY="$work" DIARIZATION_MODELS_DIR="$models" "$tool" \
    --fixture clip --out bad.rttm --min-speakers 3 --max-speakers 2 2> "$work/err"; then
  echo "expected failure for min > max" >&2; exit 1
fi
grep -q "min_speakers" "$work/err"
# num_speakers forces KMeans (pyannote's fallback): 3 speakers come out.
BUILD_WORKING_DIRECTORY="$work" DIARIZATION_MODELS_DIR="$models" "$tool" \
    --fixture clip --out three.rttm --num-speakers 3
[[ $(awk '{print $8}' "$work/three.rttm" | sort -u | wc -l) -eq 3 ]]
# FAST mode: every other chunk of 03 is a 2 s-step recording; the tool takes
# the step from reconstruction.npz:chunk_step (same output as an explicit
# --step-samples 32000, different from the 1 s grid).
mkdir -p "$work/fast"
python3 - "$data/findit-dia-parity/03_dual_speaker" "$work/fast" <<'PY'
import struct, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
def npy(descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload
def member(path, key):
    raw = zipfile.ZipFile(path).read(key + ".npy")
    hlen = struct.unpack("<H", raw[8:10])[0]
    return raw[10 + hlen:]
for name, key, per in (("segmentations", "segmentations", 589 * 3 * 4), ("raw_embeddings", "embeddings", 3 * 256 * 4)):
    data = member(f"{src}/{name}.npz", key)
    chunks = len(data) // per
    kept = b"".join(data[c * per:(c + 1) * per] for c in range(0, chunks, 2))
    n = len(kept) // per
    shape = "(%d, 589, 3)" % n if key == "segmentations" else "(%d, 3, 256)" % n
    with zipfile.ZipFile(f"{dst}/{name}.npz", "w") as z:
        z.writestr(key + ".npy", npy("<f4", shape, kept))
with zipfile.ZipFile(f"{dst}/reconstruction.npz", "w") as z:
    z.writestr("chunk_step.npy", npy("<f8", "()", struct.pack("<d", 2.0)))
PY
for args in "" "--step-samples 32000" "--step-samples 16000"; do
  BUILD_WORKING_DIRECTORY="$work" DIARIZATION_MODELS_DIR="$models" "$tool" \
      --fixture fast --out "fast${args// /}.rttm" $args
done
cmp "$work/fast.rttm" "$work/fast--step-samples32000.rttm"
if cmp -s "$work/fast.rttm" "$work/fast--step-samples16000.rttm"; then
  echo "the 2 s grid made no difference" >&2; exit 1
fi
echo PASS
