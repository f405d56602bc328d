#!/usr/bin/env bash
# pyannote's answer at every sample rate (issue 41, ADR 0099): fixture audio
# made 8, 22.05, 44.1 and 48 kHz, mono and stereo, by sox (the commands of
# tools/reference/record_rates.py; each file's SHA-256 must be the recorded
# one, so another sox fails here instead of comparing other audio), against
# pyannote.audio 4.0.4's own pipeline on the same files (references in
# testing/testdata/pipeline_rates, real segmentation weights, seed-1 random
# embedding weights, real PLDA). pyannote resamples with torchaudio's kernel:
# the whole recording for segmentation, each embedding window's crop alone;
# the service does the same (engine/audio/resampler.h, crop_edges.h).
#
# Every file through tools/diarize (the offline path: decoder, engine's
# window batches, CPU networks), both views and the recorded speaker-count
# hints; five of them through the real server too (streamed as raw PCM at
# their own rate, and as whole files with DiarizeFile), regular view. Every
# RTTM must be pyannote's, line for line (the uri column aside).
#
# Needs the real segmentation weights ($DIARIZATION_REAL_MODELS_DIR, made by
# scripts/test.sh) and sox.
source "$(dirname "$0")/testlib.sh"

MODELS="${DIARIZATION_REAL_MODELS_DIR:-}"
DATA="${DIARIZATION_TEST_DATA:-}"
REFS="$RUNFILES/testing/testdata/pipeline_rates"
DIARIZE_BIN="$RUNFILES/tools/diarize/diarize"
[[ -n "$MODELS" && -f "$MODELS/segmentation.safetensors" ]] ||
  fail "DIARIZATION_REAL_MODELS_DIR ('$MODELS') is not a real-weights model directory (scripts/test.sh makes one)"
[[ -d "$DATA/findit-dia-parity" ]] || fail "no fixtures under '$DATA' (set DIARIZATION_TEST_DATA)"
[[ -f "$REFS/info.json" ]] || fail "no references $REFS/info.json"
command -v sox >/dev/null || fail "sox not found (scripts/install_deps.sh)"

# clip layout rate sha256 per line, from the recorder's info.json.
ENTRIES="$TMP/entries"
python3 - "$REFS/info.json" >"$ENTRIES" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
print(" ".join(info["hints"]))
for f in info["files"]:
    print(f["clip"], f["layout"], f["rate"], f["audio_sha256"])
PY
read -r -a HINTS <"$ENTRIES"
SWEEP="$(IFS=,; echo "${HINTS[*]}")"
hint_suffix() { local k="${1%%=*}"; echo "${k:0:3}${1#*=}"; }
strip_uri() { awk '{ $2 = "X"; print }' "$1"; }

status=0
compare() {  # compare OURS REFERENCE WHAT
  if [[ ! -s "$2" ]]; then
    echo "$3: no pyannote reference $2"; status=1
  elif diff <(strip_uri "$1") <(strip_uri "$2") >"$1.diff"; then
    echo "$3: identical to pyannote ($(wc -l <"$2") lines, $(awk '{print $8}' "$2" | sort -u | wc -l) speakers)"
  else
    echo "$3: DIFFERS from pyannote"; head -20 "$1.diff"; status=1
  fi
}

make_audio() {  # make_audio CLIP LAYOUT RATE OUT
  local src="$DATA/findit-dia-parity/$1/clip_16k.wav"
  if [[ "$2" == mono ]]; then
    sox -D "$src" -r "$3" -b 16 -e signed-integer "$4"
  else
    sox "$src" "$4.rev.wav" reverse
    sox -D -M "$src" "$4.rev.wav" -r "$3" -b 16 -e signed-integer "$4"
  fi
}

declare -A AUDIO
while read -r clip layout rate sha; do
  name="$clip.$layout$rate"
  wav="$TMP/$name.wav"
  make_audio "$clip" "$layout" "$rate" "$wav"
  got="$(sha256sum "$wav" | cut -d' ' -f1)"
  [[ "$got" == "$sha" ]] || fail "$name: sox made other audio than the recording's ($got, recorded $sha): $(sox --version)"
  AUDIO[$name]="$wav"
  "$DIARIZE_BIN" --audio "$wav" --models "$MODELS" --out "$TMP/$name.rttm" \
    --sweep_hints "$SWEEP" 2>"$TMP/$name.log" || { cat "$TMP/$name.log"; fail "$name: diarize failed"; }
  "$DIARIZE_BIN" --audio "$wav" --models "$MODELS" --out "$TMP/$name.exclusive.rttm" \
    --exclusive 2>>"$TMP/$name.log" || { cat "$TMP/$name.log"; fail "$name: diarize --exclusive failed"; }
  compare "$TMP/$name.rttm" "$REFS/$name.rttm" "offline $name"
  compare "$TMP/$name.exclusive.rttm" "$REFS/$name.exclusive.rttm" "offline $name exclusive"
  for hint in "${HINTS[@]}"; do
    suffix="$(hint_suffix "$hint")"
    compare "$TMP/$name.$suffix.rttm" "$REFS/$name.$suffix.rttm" "offline $name $hint"
  done
done < <(tail -n +2 "$ENTRIES")

start_server "$MODELS" --threads=2
served() {  # served MODE NAME
  local out="$TMP/$2.$1.rttm"
  timeout 600 "$CLIENT_BIN" --server="127.0.0.1:$GRPC_PORT" --mode="$1" --progress=false \
    --deadline_s=600 "${AUDIO[$2]}" >"$out" 2>"$out.err" ||
    { cat "$out.err"; tail -n 20 "$SERVER_LOG"; fail "$2: diarize_client --mode=$1 failed"; }
  compare "$out" "$REFS/$2.rttm" "server $1 $2"
}
served stream 02_pyannote_sample.mono44100
served stream 02_pyannote_sample.stereo48000
served stream 04_three_speaker.mono8000
served unary 02_pyannote_sample.stereo22050
served unary 04_three_speaker.mono48000
exit "$status"
