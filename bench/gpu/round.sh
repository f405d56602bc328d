#!/usr/bin/env bash
# The round driver of the GPU harness: unpacks the one payload
# (tools/device/pack.sh) once, sets the environment once, and runs the named
# parts (bench/gpu/parts/PART.sh) in order, each skipped (and said so) when
# its usual time no longer fits the call. Every part prints one JSON result
# line per measurement ({"part": ...}); they are collected in
# $OUT/results.jsonl, and the summary is read from there, not from prose.
#
#   here:  KITS="tests bench server" REAL_MODELS_DIR=DIR tools/device/pack.sh
#   run:   carry [".device/payload.tar.xz"], command
#          "PARTS='tests fixtures rtfx streams' bash bench/gpu/round.sh"
#   rehearsal here, CPU backend: KITS=cpu OUTPUT_BASE= tools/device/pack.sh;
#          DEVICE=cpu PARTS='fixtures streams soak attack' bash bench/gpu/round.sh
#
# Parts (about how long each asks for on an H200):
#   tests     the GPU tests (~300 s)
#   fixtures  the fixture recordings' RTTMs, compared byte for byte with
#             REFERENCE_RTTM (default .device/cpu_rttm: the same part run
#             here with DEVICE=cpu writes $OUT/rttm, carry it) (~100 s)
#   qualify   kernel tests, sanitizers, the qualification harness
#             ($OUT/qualification.json is the record to commit) (~420 s)
#   rtfx      rtfx_main in the server's configuration, accurate and fast
#             (~70 s)
#   ratio     rtfx_main against pyannote.audio, alternating pairs (~250 s;
#             kits bench + ratio)
#   streams   the real server and clients, 64 streams of 10 minutes,
#             accurate and fast (~60 s)
#   live      64 streams paced at real time: final latency and partial lag
#             (~170 s)
#   soak      the bounded soak (bench/soak/soak.sh) (~400 s)
#   attack    tests/attack_test against the CUDA server (~560 s)
#   multi_gpu streams on 1, 2, 4, 8 GPUs, scaling (~300 s per round)
# Environment for the parts: WORK (the unpacked payload: bin lib data plda
# real wheels), B=$WORK/bin, DEVICE (cuda; cpu for a rehearsal), SERVER_BIN,
# PART_OUT (the part's log folder, packed into $OUT/round.tgz), OUT (files
# to hand back), BUDGET_LEFT_S, and the tests'
# DIARIZATION_TEST_DATA, DIARIZATION_REAL_MODELS_DIR, TEST_TMPDIR.
# PAYLOAD_DIR=DIR uses an unpacked payload (or stand-ins) instead of the
# archive. BUDGET_S (570) bounds the call. Each part's own variables are in
# its file's head.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-logs}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
RESULTS=$OUT/results.jsonl
: >"$SUMMARY"
: >"$RESULTS"
say() { echo "$*" | tee -a "$SUMMARY"; }
BUDGET_S=${BUDGET_S:-570}
PARTS=${PARTS:-tests fixtures rtfx streams}
DEVICE=${DEVICE:-cuda}
start=$SECONDS
declare -A NEEDS_S=([tests]=300 [fixtures]=100 [qualify]=420 [rtfx]=70
  [ratio]=250 [streams]=60 [live]=170 [soak]=400 [attack]=560 [multi_gpu]=300)
source tools/device/kits.sh

# The payload, unpacked once (WORK is removed at the end unless KEEP_WORK=1).
WORK=$(mktemp -d /tmp/gpu_round.XXXXXX)
[[ "${KEEP_WORK:-0}" == 1 ]] || trap 'rm -rf "$WORK"' EXIT
if [[ -n "${PAYLOAD_DIR:-}" ]]; then
  cp -r "$PAYLOAD_DIR"/. "$WORK"/ || { say "round.sh: cannot copy $PAYLOAD_DIR"; exit 2; }
else
  tar -C "$WORK" -xJf "${PAYLOAD:-.device/payload.tar.xz}" ||
    { say "round.sh: no payload (tools/device/pack.sh writes .device/payload.tar.xz)"; exit 2; }
fi
B=$WORK/bin
# Every part's logs, packed into $OUT/round.tgz at the end (the device tool
# brings few files back): $OUT keeps summary.txt, results.jsonl, round.tgz
# and what a part hands back (qualification.json, rttm.tar).
LOGS=$WORK/logs
mkdir -p "$WORK/tmp" "$LOGS"
export WORK B DEVICE OUT
export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DIARIZATION_TEST_DATA="$WORK/data" DIARIZATION_REAL_MODELS_DIR="$WORK/real"
export TEST_TMPDIR="$WORK/tmp"
# The service binary of this payload: the CUDA server, or the CPU one in a
# rehearsal.
SERVER_BIN=$B/diarization_server_cuda
[[ -x "$SERVER_BIN" ]] || SERVER_BIN=$B/diarization_server
export SERVER_BIN
say "round: kits [$(cat "$WORK/kits" 2>/dev/null)], commit $(cat "$WORK/commit" 2>/dev/null || echo unknown), device $DEVICE; gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)"
for b in "$B"/*; do
  missing=$(ldd "$b" 2>/dev/null | grep "not found")
  [[ -n "$missing" ]] && say "MISSING LIBS for $(basename "$b"): $missing"
done

left() { echo $((BUDGET_S - (SECONDS - start))); }
n=0
for entry in $PARTS; do
  # PART@VARIANT (bench/gpu/ab.sh): the part with the variant's flags
  # (VARIANT_FLAGS_<variant>) and, if given, its binaries
  # (VARIANT_BIN_<variant>, e.g. a baseline build's bin/).
  part=${entry%@*} variant=""
  [[ $entry == *@* ]] && variant=${entry#*@}
  n=$((n + 1))
  flags_var=VARIANT_FLAGS_$variant bin_var=VARIANT_BIN_$variant
  vflags=${!flags_var:-} vbin=${!bin_var:-$B}
  script=bench/gpu/parts/$part.sh
  [[ $part == live ]] && script=bench/gpu/parts/streams.sh
  [[ -f $script ]] || { say "UNKNOWN part $part"; continue; }
  need=${NEEDS_S[$part]:-60} need_var=NEED_S_$part
  need=${!need_var:-$need}  # NEED_S_<part>: a shorter run's own estimate
  if (($(left) < need)); then
    say "SKIPPED $part: needs about $need s, $(left) s left"
    continue
  fi
  PART_OUT=$LOGS/$(printf '%02d' $n)_${entry/@/_}
  mkdir -p "$PART_OUT"
  s=$SECONDS
  # live: the streams part's live step alone.
  env PART="$part" PART_OUT="$PART_OUT" BUDGET_LEFT_S="$(left)" B="$vbin" \
    ${variant:+VARIANT="$variant" FLAGS="$vflags"} \
    $([[ $part == live ]] && echo SKIP_THROUGHPUT=1 || true) \
    $([[ $part == streams ]] && echo SKIP_LIVE=${SKIP_LIVE:-1} || true) \
    timeout "$(left)" bash "$script" >"$PART_OUT/part.log" 2>&1
  rc=$?
  grep '^{' "$PART_OUT/part.log" >>"$RESULTS"
  say "$entry rc=$rc $((SECONDS - s)) s"
  grep -E '^(PART|  )' "$PART_OUT/part.log" | head -40 | tee -a "$SUMMARY" >/dev/null
done

# The summary, from the JSON result lines.
python3 - "$RESULTS" <<'PY' | tee -a "$SUMMARY"
import json, sys
rows = []
for line in open(sys.argv[1]):
    try:
        rows.append(json.loads(line))
    except ValueError:
        print("unreadable result line:", line.strip()[:200])
print(f"results: {len(rows)} lines")
skip = {"part", "backend", "device", "log"}
for r in rows:
    name = r.get("part", "?") + (f" {r['variant']}" if r.get("variant") else "") + \
        (f" {r['step']}" if r.get("step") else "") + (f" {r['mode']}" if r.get("mode") else "")
    vals = ", ".join(f"{k}={v}" for k, v in r.items()
                     if k not in skip | {"variant", "step", "mode"} and not isinstance(v, (dict, list)))
    print(f"  {name}: {vals}")
PY
cp "$SUMMARY" "$RESULTS" "$LOGS"/ 2>/dev/null
tar -C "$LOGS" -czf "$OUT/round.tgz" . 2>/dev/null
say "round: $((SECONDS - start)) s"
