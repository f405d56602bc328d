#!/usr/bin/env bash
# Runs the real diarize binary on random-weight models: a file shorter than
# one window (one zero-padded chunk) and a 15 s file with --num-speakers 1.
# Checks the RTTM's form (10 fields, SPEAKER records, the uri, segments
# inside the windows' span, positive durations), the speaker-count hint, and
# that bad arguments fail with exit code 2. As in pyannote, the zero-padded
# last window is not cropped (pipeline.md §2), so a short file's segments
# may reach 10 s (random weights detect "speech" in the padding).
set -euo pipefail
bin_dir="${TEST_SRCDIR}/diarization/tools"
ws="$(dirname "$(readlink -f "${bin_dir}/diarize/diarize_test.sh")")/../.."
data="${DIARIZATION_TEST_DATA:-${ws}/../shared/data}"
plda="${DIARIZATION_MODELS_DIR:-${ws}/../shared/models}/community-1-plda"
out="${TEST_TMPDIR}"
"${bin_dir}/make_random_models/make_random_models" --out "${out}/models" --seed 5 \
  --plda_from "${plda}" >/dev/null

check_rttm() {  # file uri max_end_s
  awk -v uri="$2" -v max="$3" '
    NF != 10 || $1 != "SPEAKER" || $2 != uri || $3 != 1 { print "bad line: " $0; bad = 1 }
    $4 < 0 || $5 <= 0 || $4 + $5 > max + 0.001 { print "bad times: " $0; bad = 1 }
    END { exit bad }' "$1"
}

# End of the last window: (windows − 1) s + 10 s, from diarize's summary.
span_of() { sed -n 's/.* \([0-9]*\) windows,.*/\1/p' "$1" | awk '{print $1 - 1 + 10}'; }

"${bin_dir}/diarize/diarize" --audio "${data}/speakrs-fixtures/test_short.wav" \
  --models "${out}/models" --out "${out}/short.rttm" --threads 1 2>"${out}/short.log"
cat "${out}/short.log"
[[ "$(span_of "${out}/short.log")" == 10 ]] || { echo "FAIL: expected 1 window" >&2; exit 1; }
check_rttm "${out}/short.rttm" test_short 10

"${bin_dir}/diarize/diarize" --audio "${data}/speakrs-fixtures/test_single_speaker.wav" \
  --models "${out}/models" --out "${out}/single.rttm" --num-speakers 1 --uri file1 \
  2>"${out}/single.log"
cat "${out}/single.log"
check_rttm "${out}/single.rttm" file1 "$(span_of "${out}/single.log")"
labels="$(awk '{print $8}' "${out}/single.rttm" | sort -u | wc -l)"
if [[ "${labels}" -gt 1 ]]; then
  echo "FAIL: --num-speakers 1 gave ${labels} labels" >&2; exit 1
fi

set +e
"${bin_dir}/diarize/diarize" --models "${out}/models" --out "${out}/x.rttm" 2>/dev/null
rc=$?
set -e
if [[ "${rc}" -ne 2 ]]; then
  echo "FAIL: missing --audio gave exit code ${rc}, expected 2" >&2; exit 1
fi
echo "diarize_test: 3 passed, 0 failed"
