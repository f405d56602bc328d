#!/usr/bin/env bash
# On a machine with two GPUs: one server process with one pre-loaded pipeline
# per GPU (--device=cuda:0,1). Checks that GetInfo lists both devices, that
# 16 concurrent requests spread over both, and that every result is the same
# RTTM whichever GPU ran it. Payload: bench/service_overhead/pack_gpu.sh.
#   run (kind nvidia-h200-x2): carry [".device/service-overhead.tar.xz"],
#   command "bash bench/service_overhead/two_gpu_check.sh"
set -uo pipefail
cd "$(dirname "$0")/../.."
WORK=$(mktemp -d)
tar -C "$WORK" -xJf .device/service-overhead.tar.xz || { echo "no payload"; exit 2; }
export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=index,name --format=csv,noheader
"$WORK/bin/make_random_models" --out "$WORK/models" --plda_from "$WORK/plda" >/dev/null || exit 1
"$WORK/bin/diarization_server_cuda" --models "$WORK/models" --device=cuda:0,1 \
  --listen 127.0.0.1:0 --port_file "$WORK/ports" --metrics_listen= 2>"$WORK/server.log" &
pid=$!
for _ in $(seq 120); do [[ -s "$WORK/ports" ]] && break; sleep 0.5; done
port=$(awk '{print $1}' "$WORK/ports")
C=("$WORK/bin/diarize_client" --server "127.0.0.1:$port" --wait_for_serving_s 120)
"${C[@]}" --info | tee "$WORK/info.json" | head -c 2000; echo
for i in $(seq 16); do
  "${C[@]}" --mode unary --output json "$WORK/data/four_speaker.wav" >"$WORK/r$i.json" 2>"$WORK/r$i.err" &
done
wait $(jobs -p | grep -v "^$pid$") 2>/dev/null
python3 - "$WORK" <<'PY'
import json, sys, glob, collections
w = sys.argv[1]
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
print("TWO-GPU CHECK", "PASS" if ok else "FAIL")
PY
kill -TERM $pid; wait $pid; echo "server exit $?"
tail -3 "$WORK/server.log"
