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
echo PASS
