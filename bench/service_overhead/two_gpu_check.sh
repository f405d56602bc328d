#!/usr/bin/env bash
# On a machine with two GPUs: one server process with one pre-loaded pipeline
# per GPU (--device=cuda:0,1). Checks that GetInfo lists both devices, that
# 16 concurrent requests spread over both, and that every result is the same
# RTTM whichever GPU ran it, and that the metrics endpoint reports each
# device (precision, arena). Then times engine throughput on one GPU against
# two. Payload: bench/service_overhead/pack_gpu.sh.
#   run (kind nvidia-h200-x2): carry [".device/service-overhead.tar.xz"],
#   command "bash bench/service_overhead/two_gpu_check.sh"
set -uo pipefail
cd "$(dirname "$0")/../.."
WORK=$(mktemp -d)
tar -C "$WORK" -xJf .device/service-overhead.tar.xz || { echo "no payload"; exit 2; }
export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=index,name --format=csv,noheader
"$WORK/bin/make_random_models" --out "$WORK/models" --plda_from "$WORK/plda" >/dev/null || exit 1
start_server() {  # $1: --metrics_listen value
  rm -f "$WORK/ports"
  "$WORK/bin/diarization_server_cuda" --models "$WORK/models" --device=cuda:0,1 \
    --listen 127.0.0.1:0 --port_file "$WORK/ports" --metrics_listen="$1" \
    2>"$WORK/server.log" &
  pid=$!
  for _ in $(seq 120); do
    [[ -s "$WORK/ports" ]] && return 0
    kill -0 $pid 2>/dev/null || return 1
    sleep 0.5
  done
  return 1
}
metrics_ok=1
if ! start_server 127.0.0.1:0; then
  metrics_ok=0
  echo "METRICS ENDPOINT FAILED; server log:"; cat "$WORK/server.log"
  kill $pid 2>/dev/null; wait $pid 2>/dev/null
  start_server "" || { echo "server did not start"; cat "$WORK/server.log"; exit 1; }
fi
read -r port metrics_port <"$WORK/ports"
C=("$WORK/bin/diarize_client" --server "127.0.0.1:$port" --wait_for_serving_s 120)
"${C[@]}" --info | tee "$WORK/info.json" | head -c 2000; echo
for i in $(seq 16); do
  "${C[@]}" --mode unary --output json "$WORK/data/four_speaker.wav" >"$WORK/r$i.json" 2>"$WORK/r$i.err" &
done
wait $(jobs -p | grep -v "^$pid$") 2>/dev/null
if [[ $metrics_ok == 1 ]]; then
  python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$metrics_port/metrics').read().decode())" >"$WORK/metrics.txt"
  grep -E '^diarization_(device_info|device_memory_bytes|audio_seconds_total)' "$WORK/metrics.txt"
fi
python3 - "$WORK" "$metrics_ok" <<'PY'
import json, sys, glob, collections, re
w = sys.argv[1]; metrics_ok = sys.argv[2] == "1"
devices = collections.Counter(); rttms = set(); bad = 0
for f in sorted(glob.glob(f"{w}/r*.json")):
    try:
        r = json.load(open(f))
    except Exception as e:
        bad += 1; print("unreadable", f, open(f.replace(".json", ".err")).read()[:300]); continue
    devices[r.get("device")] += 1
    rttms.add(r.get("rttm"))
info = json.load(open(f"{w}/info.json"))
names = [d.get("name") for d in info.get("devices", [])]
print("GetInfo devices:", names)
print("results per device:", dict(devices), "unreadable:", bad)
print("distinct RTTMs:", len(rttms))
ok = len(names) == 2 and len(devices) == 2 and bad == 0 and len(rttms) == 1
if metrics_ok:
    text = open(f"{w}/metrics.txt").read()
    for d in ("cuda:0", "cuda:1"):
        has_info = re.search(r'^diarization_device_info\{[^}]*device="%s"[^}]*embedding_precision="tf32"' % d, text, re.M)
        has_arena = re.search(r'^diarization_device_memory_bytes\{[^}]*device="%s"[^}]*kind="arena_used"\} [1-9]' % d, text, re.M) or \
                    re.search(r'^diarization_device_memory_bytes\{[^}]*kind="arena_used"[^}]*device="%s"\} [1-9]' % d, text, re.M)
        print(f"metrics {d}: device_info={'yes' if has_info else 'NO'} arena_used>0={'yes' if has_arena else 'NO'}")
        ok = ok and bool(has_info) and bool(has_arena)
else:
    print("metrics endpoint: FAILED to start (see above); not counted against the two-GPU check")
print("TWO-GPU CHECK", "PASS" if ok else "FAIL")
PY
kill -TERM $pid; wait $pid; echo "server exit $?"
tail -3 "$WORK/server.log"

# Throughput on one GPU and on two, in the same process setup, alternated
# (A B A B): 16 requests of 10 min (the 30 s sample tiled 20x), 8 in flight.
echo "== throughput: cuda:0 vs cuda:0,1 =="
for dev in cuda:0 cuda:0,1 cuda:0 cuda:0,1; do
  "$WORK/bin/engine_direct_cuda" --models "$WORK/models" --device "$dev" \
    --audio "$WORK/data/sample.wav" --repeat_audio 20 --mode unary \
    --requests 16 --concurrency 8 --warmup 2 --host_threads 4 2>/dev/null |
    python3 -c "import json,sys; r=json.loads(sys.stdin.read()); print('$dev', 'throughput_rtfx', r['throughput_rtfx'], 'jobs', r['jobs_per_device'], 'distinct_rttms', r['distinct_rttms'])"
done
