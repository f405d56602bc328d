#!/usr/bin/env bash
# Part "streams" (and, with SKIP_THROUGHPUT=1, "live") of bench/gpu/round.sh.
# On the GPU machine: the real server and the real client binaries under many
# concurrent streams. One server process (--device=$DEVICES, default "cuda":
# every GPU), then:
#   1. throughput: $STREAMS (64) concurrent `diarize_client --mode stream`
#      (as fast as flow control allows) of a $MINUTES (10) minute recording,
#      accurate mode, then the same in FAST mode: aggregate RTFx = streams ×
#      audio seconds / wall seconds, results per device, distinct RTTMs (one
#      expected: every stream sends the same audio);
#   2. live path: $STREAMS concurrent `--mode realtime` streams (paced at the
#      audio's own rate) of a $LIVE_MINUTES (2) minute recording: the latency
#      of each final result after the stream's half-close, p50/p99 (the client
#      sends its last chunk at start + audio duration, so latency = client wall
#      time − audio duration, process exit included), and how far each
#      partial result is behind the audio (its arrival less the time the
#      client sent the audio it covers), p50/p99;
#   3. /metrics per device, SIGTERM exit code.
# Payload: kit "server" (random weights, real PLDA: network cost does not
# depend on the weights' values); a rehearsal here: kit "cpu", DEVICE=cpu.
# One JSON line per step ({"part": "streams", "step": ...}).
# SEGMENTATION_FROM=FILE gives the server's models these segmentation
# weights (make_random_models --segmentation_from; e.g. the payload's real
# segmentation-3.0 weights, real/segmentation.safetensors), so what the
# clustering gets (speaker counts, training sets) is a trained
# segmentation's, as in production; the embedding stays random. Default:
# random weights for both, as every round before 2026-12-04's ninth.
# SKIP_LIVE=1 skips step 2, SKIP_THROUGHPUT=1 step 1. The live step also
# prints the final's latency as the client itself measures it (half-close to
# the final's arrival, --report_latency) and the server's call-log breakdown
# of each final (tail_* fields, docs/operations.md). CLIENT_FLAGS adds
# client flags to the throughput steps; TIMELINE=1 prints their worker
# states per half second. SERVER_FLAGS replaces the extra server flags
# (default: a backlog limit that admits 64 × 10 min at once; the host threads
# and BLAS threads are the server's own defaults since 921cb58); FLAGS adds
# server flags (a variant of bench/gpu/ab.sh). REAL_SEGMENTATION=1: the
# payload's real segmentation weights (SEGMENTATION_FROM).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${WORK:?run through bench/gpu/round.sh}"
# This run's scratch beside the payload (bin, data and plda read from it);
# the logs in the part's folder.
[[ "${REAL_SEGMENTATION:-0}" == 1 ]] &&
  SEGMENTATION_FROM=${SEGMENTATION_FROM:-$WORK/real/segmentation.safetensors}
RUN=$(mktemp -d "$WORK/streams.XXXXXX")
ln -s "$WORK/bin" "$WORK/data" "$WORK/plda" "$RUN"/
WORK=$RUN
LOGS=${PART_OUT:-$RUN}
mkdir -p "$LOGS"
SERVER_BIN=${SERVER_BIN:-$WORK/bin/diarization_server_cuda}
DEVICES=${DEVICES:-${DEVICE:-cuda}}
STREAMS=${STREAMS:-64}
MINUTES=${MINUTES:-10}
LIVE_MINUTES=${LIVE_MINUTES:-2}
"$WORK/bin/make_random_models" --out "$WORK/models" --plda_from "$WORK/plda" \
  ${SEGMENTATION_FROM:+--segmentation_from "$SEGMENTATION_FROM"} >/dev/null || exit 1
echo "segmentation weights: ${SEGMENTATION_FROM:-random (seed 1)}" | tee -a "$LOGS/summary.txt"
# Recordings of the wanted length: the four-speaker clip tiled (stdlib only).
tile() {  # $1 seconds, $2 output
  python3 - "$WORK/data/four_speaker.wav" "$1" "$2" <<'PY'
import sys, wave
src, seconds, dst = sys.argv[1], float(sys.argv[2]), sys.argv[3]
with wave.open(src) as w:
    params, frames = w.getparams(), w.readframes(w.getnframes())
want = int(seconds * params.framerate) * params.sampwidth * params.nchannels
data = (frames * (want // len(frames) + 1))[:want]
with wave.open(dst, "wb") as o:
    o.setparams(params); o.writeframes(data)
PY
}
tile $((MINUTES * 60)) "$WORK/long.wav" || { echo "FAILED: could not make the recordings"; exit 1; }
tile $((LIVE_MINUTES * 60)) "$WORK/live.wav" || { echo "FAILED: could not make the recordings"; exit 1; }
rm -f "$WORK/ports"
# The trunk's engines kept in a file, as deploy/k8s's GPU overlay does
# (--cuda_conv_engine_cache): one file per server binary (a baseline build
# must not take another build's choices), kept in /tmp across the runs of
# one machine start, so only a binary's first start times the candidates.
# ENGINE_CACHE= (empty) runs without one.
ENGINE_CACHE=${ENGINE_CACHE-/tmp/grpc_streams_engines_$(cksum <"$SERVER_BIN" | cut -d' ' -f1).tsv}
"$SERVER_BIN" --models "$WORK/models" --device="$DEVICES" \
  ${ENGINE_CACHE:+--cuda_conv_engine_cache="$ENGINE_CACHE"} \
  --listen 127.0.0.1:0 --port_file "$WORK/ports" --metrics_listen=127.0.0.1:0 \
  --max_concurrent_streams=$((STREAMS + 8)) ${SERVER_FLAGS:---max_backlog_audio_s=40000} ${FLAGS:-} \
  2>"$LOGS/server.log" &
pid=$!
for _ in $(seq 240); do [[ -s "$WORK/ports" ]] && break; kill -0 $pid 2>/dev/null || break; sleep 0.5; done
read -r port metrics_port <"$WORK/ports" || { echo "server did not start"; tail -20 "$LOGS/server.log"; exit 1; }
C=("$WORK/bin/diarize_client" --server "127.0.0.1:$port" --progress=false)
"${C[@]}" --wait_for_serving_s 300 --info >"$LOGS/info.json" || { echo "not serving"; tail -20 "$LOGS/server.log"; exit 1; }
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name --format=csv,noheader
# One warm-up stream per device count is not needed: graphs are captured at
# load for every batch shape the first calls use; one short call warms the
# channel and the host pools.
"${C[@]}" --mode unary "$WORK/data/four_speaker.wav" >/dev/null 2>&1

run_batch() {  # $1 label, $2 mode, $3 file, rest: client flags
  local label=$1 mode=$2 file=$3; shift 3
  mkdir -p "$WORK/$label"
  local t0; t0=$(date +%s.%N)
  local live=0 partial=()
  [[ $label == live* ]] && live=1 && partial=(--partial --report_latency)
  for i in $(seq "$STREAMS"); do
    (
      if [[ $live == 1 ]]; then
        # Partial results on stderr, each line stamped with the wall time it
        # arrived (bash's EPOCHREALTIME: no fork per line).
        exec 2> >(while IFS= read -r l; do echo "$EPOCHREALTIME $l"; done >"$WORK/$label/r$i.err")
      else
        exec 2>"$WORK/$label/r$i.err"
      fi
      s=$EPOCHREALTIME
      "${C[@]}" --mode "$mode" --output json ${partial[@]+"${partial[@]}"} "$@" "$file" >"$WORK/$label/r$i.json"
      echo "$? $s $EPOCHREALTIME" >"$WORK/$label/t$i"
    ) &
  done
  # Not the server, nor the timeline's reader (it stops after the step).
  wait $(jobs -p | grep -v -e "^$pid$" -e "^${timeline_pid:-none}$") 2>/dev/null
  [[ $live == 1 ]] && sleep 1  # the stderr stampers may still be writing
  local t1; t1=$(date +%s.%N)
  python3 - "$WORK/$label" "$label" "$STREAMS" "$(python3 -c "import wave;w=wave.open('$file');print(w.getnframes()/w.getframerate())")" "$t0" "$t1" "$LOGS/server.log" <<'PY' | tee -a "$LOGS/summary.txt"
import json, sys, glob, collections, statistics, re, hashlib
d, label, n, audio_s, t0, t1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
server_log = sys.argv[7]
devices = collections.Counter(); rttms = set(); failed = 0; lat = []; lag = []; in_client = []
partial_re = re.compile(r"^(\d+\.\d+) partial.*: received ([0-9.]+) s, processed ([0-9.]+) s")
# diarize_client --report_latency: half-close (WritesDone) to the final's arrival.
final_re = re.compile(r"^\d+\.\d+ final result ([0-9.]+) ms after the half-close")
for i in range(1, n + 1):
    rc, s, e = open(f"{d}/t{i}").read().split()
    if rc != "0":
        failed += 1
        print(f"  {label} stream {i} rc={rc}: {open(f'{d}/r{i}.err').read()[:300]}")
        continue
    r = json.load(open(f"{d}/r{i}.json"))
    devices[r.get("device")] += 1; rttms.add(r.get("rttm"))
    lat.append(float(e) - float(s) - audio_s)
    if label.startswith("live"):
        # How far behind the audio each partial result is: its arrival less
        # the moment the paced client sent the audio it covers (start +
        # processed seconds).
        for l in open(f"{d}/r{i}.err"):
            m = partial_re.match(l)
            if m:
                lag.append(float(m.group(1)) - float(s) - float(m.group(3)))
            m = final_re.match(l)
            if m:
                in_client.append(float(m.group(1)))
wall = t1 - t0
digest = hashlib.md5("".join(sorted(r or "" for r in rttms)).encode()).hexdigest()[:12]
line = (f"{label}: {n} streams x {audio_s:.0f} s, wall {wall:.2f} s, aggregate RTFx {n * audio_s / wall:.1f}, "
        f"failed {failed}, per device {dict(devices)}, distinct RTTMs {len(rttms)} (md5 {digest})")
if label.startswith("live") and lat:
    lat.sort()
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    line += f"; final after half-close p50 {p(0.50)*1e3:.0f} ms, p99 {p(0.99)*1e3:.0f} ms, max {lat[-1]*1e3:.0f} ms"
    if lag:
        lag.sort()
        q = lambda x: lag[min(len(lag) - 1, int(x * len(lag)))]
        line += f"; {len(lag)} partials, behind the audio p50 {q(0.50)*1e3:.0f} ms, p99 {q(0.99)*1e3:.0f} ms, max {lag[-1]*1e3:.0f} ms"
    else:
        line += "; no partial results seen"
    if in_client:
        in_client.sort()
        q = lambda x: in_client[min(len(in_client) - 1, int(x * len(in_client)))]
        line += (f"\n  {label}: final after the half-close, measured in the client: p50 {q(0.50):.0f} ms, "
                 f"p99 {q(0.99):.0f} ms, max {in_client[-1]:.0f} ms ({len(in_client)} streams)")
    # The server's view (call log, docs/operations.md): from the end of the
    # audio to the result's delivery, and where that time went.
    tails = collections.defaultdict(list)
    for l in open(server_log, errors="replace"):
        if not l.startswith("{") or '"tail_s"' not in l:
            continue
        try:
            j = json.loads(l)
        except ValueError:
            continue
        if j.get("method") != "Diarize" or abs((j.get("audio_s") or 0) - audio_s) > 0.5:
            continue
        for k, v in j.items():
            if k.startswith("tail_") and isinstance(v, (int, float)):
                tails[k].append(v)
    if tails:
        line += f"\n  {label}: server, end of audio to result (call log, {len(tails['tail_s'])} calls), p50/p99/max:"
        for k in sorted(tails, key=lambda k: (k != "tail_s", k)):
            v = sorted(tails[k])
            r = lambda x: v[min(len(v) - 1, int(x * len(v)))]
            unit = 1e3 if k.endswith("_s") else 1
            line += f"\n    {k:32s} {r(0.5)*unit:8.1f} {r(0.99)*unit:8.1f} {v[-1]*unit:8.1f}" + (" ms" if unit > 1 else "")
print(line)
import os
out = {"part": "streams", "variant": os.environ.get("VARIANT", ""), "step": label, "streams": n, "audio_s": round(audio_s, 1),
       "wall_s": round(wall, 2), "rtfx": round(n * audio_s / wall, 1), "failed": failed,
       "distinct_rttms": len(rttms), "rttm_md5": digest}
if label.startswith("live") and lat:
    out["final_p50_ms"] = round(p(0.50) * 1e3); out["final_p99_ms"] = round(p(0.99) * 1e3)
    if lag:
        out["partial_lag_p50_ms"] = round(sorted(lag)[min(len(lag) - 1, int(0.50 * len(lag)))] * 1e3)
        out["partial_lag_p99_ms"] = round(sorted(lag)[min(len(lag) - 1, int(0.99 * len(lag)))] * 1e3)
print(json.dumps(out))
PY
}
# What the device worker threads did during one step: the change of
# diarization_device_worker_seconds_total (busy / starved / filling / held,
# per device and thread) and of the batch counters since the previous
# scrape, so a shortfall in aggregate RTFx can be put on the GPU (busy) or
# on what feeds it (starved, filling, held); and each stage's GPU seconds
# (diarization_device_gpu_seconds_total), which split "busy" into the GPU's
# work and the host's around it.
prev_metrics="$WORK/metrics_start.txt"
: >"$prev_metrics"
worker_report() {  # $1 label
  local now="$WORK/metrics_$1.txt"
  python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$metrics_port/metrics').read().decode())" >"$now" 2>/dev/null || { echo "  worker states: /metrics unreadable"; return; }
  python3 - "$prev_metrics" "$now" "$1" <<'PY'
import re, sys
def read(path):
    out = {}
    for line in open(path):
        m = re.match(r'^(diarization_(?:device_worker_seconds_total|device_gpu_seconds_total|batch_size_(?:sum|count)))\{([^}]*)\} (\S+)$', line)
        if m:
            out[(m.group(1), m.group(2))] = float(m.group(3))
    return out
a, b = read(sys.argv[1]), read(sys.argv[2])
d = {k: v - a.get(k, 0.0) for k, v in b.items()}
def labels(s):
    return dict(re.findall(r'(\w+)="([^"]*)"', s))
threads = {}
for (name, lab), v in d.items():
    if name == "diarization_device_worker_seconds_total":
        l = labels(lab)
        threads.setdefault((l["device"], l["thread"]), {})[l["state"]] = v
print(f"  worker states during {sys.argv[3]} (seconds, share of the thread's time):")
for (dev, th), st in sorted(threads.items()):
    tot = sum(st.values()) or 1.0
    parts = "  ".join(f"{s} {st.get(s, 0.0):7.2f} ({st.get(s, 0.0) / tot:5.1%})" for s in ("busy", "starved", "filling", "held"))
    print(f"    {dev:8s} {th:12s} {parts}")
for model in ("segmentation", "embedding"):
    n = sum(v for (name, lab), v in d.items() if name.endswith("_count") and labels(lab).get("model") == model)
    w = sum(v for (name, lab), v in d.items() if name.endswith("_sum") and labels(lab).get("model") == model)
    if n:
        print(f"    {model} batches {n:.0f}, windows {w:.0f}, mean batch {w / n:.1f}")
# GPU time per stage (CUDA events per batch) against the stage thread's busy
# wall time: the rest of "busy" is host work around the batches.
for (name, lab), v in sorted(d.items()):
    if name != "diarization_device_gpu_seconds_total":
        continue
    l = labels(lab)
    busy = sum(st.get("busy", 0.0) for (dev, th), st in threads.items()
               if dev == l["device"] and th in (l["stage"], "both"))
    share = f" ({v / busy:5.1%} of the thread's busy time)" if busy else ""
    print(f"    {l['device']:8s} {l['stage']:12s} GPU {v:7.2f} s{share}")
PY
  prev_metrics=$now
}
# TIMELINE=1: while each throughput step runs, /metrics is read every 0.25 s
# and the step's worker states are printed per half second of its wall
# time (starved / busy seconds of each stage thread), so a shortfall can be
# placed at the step's start (clients starting), middle (ingestion) or end
# (the last clusterings).
timeline_start() {  # $1 label
  [[ "${TIMELINE:-0}" == 1 ]] || return 0
  rm -f "$WORK/timeline_stop"
  python3 - "$metrics_port" "$WORK/timeline_$1.tsv" "$WORK/timeline_stop" <<'PY' &
import os, re, sys, time, urllib.request
port, out, stop = sys.argv[1], sys.argv[2], sys.argv[3]
pat = re.compile(r'^diarization_device_worker_seconds_total\{([^}]*)\} (\S+)$')
with open(out, "w") as f:
    while not os.path.exists(stop):
        t = time.time()
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
        except Exception:
            time.sleep(0.25); continue
        for line in body.splitlines():
            m = pat.match(line)
            if m:
                l = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
                f.write(f"{t:.3f}\t{l.get('device')}\t{l.get('thread')}\t{l.get('state')}\t{m.group(2)}\n")
        f.flush()
        time.sleep(max(0.0, 0.25 - (time.time() - t)))
PY
  timeline_pid=$!
}
timeline_report() {  # $1 label
  [[ "${TIMELINE:-0}" == 1 ]] || return 0
  touch "$WORK/timeline_stop"; wait "$timeline_pid" 2>/dev/null
  python3 - "$WORK/timeline_$1.tsv" "$1" <<'PY'
import collections, sys
rows = collections.defaultdict(dict)  # time -> (dev, thread, state) -> value
for line in open(sys.argv[1]):
    t, dev, th, st, v = line.rstrip("\n").split("\t")
    rows[float(t)][(dev, th, st)] = float(v)
times = sorted(rows)
if len(times) < 2:
    print(f"  timeline {sys.argv[2]}: too few samples"); sys.exit()
threads = sorted({(d, th) for k in rows[times[0]] for d, th in [k[:2]]})
print(f"  timeline of {sys.argv[2]} (per half second from the step's start; per thread: starved / busy seconds in it):")
t0, prev, bucket_start = times[0], times[0], times[0]
acc = collections.defaultdict(float)
def flush(t_end):
    cells = "  ".join(f"{th}: {acc[(d, th, 'starved')]:.2f}/{acc[(d, th, 'busy')]:.2f}" for d, th in threads)
    print(f"    {bucket_start - t0:5.2f}-{t_end - t0:5.2f} s  {cells}")
for t in times[1:]:
    for k, v in rows[t].items():
        acc[k] += v - rows[prev].get(k, v)
    prev = t
    if t - bucket_start >= 0.5:
        flush(t); acc.clear(); bucket_start = t
if acc:
    flush(prev)
PY
}
if [[ "${SKIP_THROUGHPUT:-0}" != 1 ]]; then
  # CLIENT_FLAGS: extra diarize_client flags for both throughput steps
  # (e.g. --chunk_ms=1000: ten times fewer messages per audio second).
  read -r -a client_flags <<<"${CLIENT_FLAGS:-}"
  worker_report start
  timeline_start accurate
  run_batch accurate stream "$WORK/long.wav" ${client_flags[@]+"${client_flags[@]}"}
  timeline_report accurate
  worker_report accurate
  timeline_start fast
  run_batch fast stream "$WORK/long.wav" --fast ${client_flags[@]+"${client_flags[@]}"}
  timeline_report fast
  worker_report fast
fi
if [[ "${SKIP_LIVE:-0}" != 1 ]]; then
  worker_report before-live
  run_batch live realtime "$WORK/live.wav"
  worker_report live
fi
python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$metrics_port/metrics').read().decode())" >"$LOGS/metrics.txt" 2>&1
grep -E '^diarization_(device_rtfx|device_memory_bytes\{[^}]*arena_(used|peak))' "$LOGS/metrics.txt" | head -20
kill -TERM $pid; wait $pid; rc=$?; echo "server exit $rc"
echo "{\"part\": \"streams\", \"step\": \"server_exit\", \"rc\": $rc}"
