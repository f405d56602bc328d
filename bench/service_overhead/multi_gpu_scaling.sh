#!/usr/bin/env bash
# On a machine with several GPUs: aggregate throughput of one server process
# over 1, 2, 4, 8 GPUs (as many as the machine has), alternated twice
# (1 2 4 8 1 2 4 8), each with 32 concurrent full-speed gRPC streams of 5 min
# per GPU from the real client binaries (bench/service_overhead/grpc_streams.sh
# with DEVICES=cuda:0,...,k-1). Prints each run, then per k the throughput
# range and the scaling against one GPU (target: >= 0.9 × k at k = 8), the
# streams per device and the number of distinct RTTMs (must be one).
#   run: carry [".device/service-overhead.tar.xz"],
#        command "bash bench/service_overhead/multi_gpu_scaling.sh"
# COUNTS overrides the GPU counts (e.g. "1"), ROUNDS (2) the alternations.
set -uo pipefail
cd "$(dirname "$0")/../.."
LOGS=${OUT:-$(pwd)/gpu-logs}
mkdir -p "$LOGS"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
[[ $gpus -ge 1 ]] || { echo "no GPU"; exit 2; }
counts=()
for k in ${COUNTS:-1 2 4 8}; do [[ $k -le $gpus ]] && counts+=("$k"); done
echo "GPUs: $gpus; counts: ${counts[*]}"
: >"$LOGS/scaling.txt"
for round in $(seq "${ROUNDS:-2}"); do
  for k in "${counts[@]}"; do
    devs=$(seq -s, 0 $((k - 1)) | sed 's/\([0-9]\+\)/cuda:\1/g')
    line=$(OUT="$LOGS/k${k}_r${round}" DEVICES="$devs" STREAMS=$((32 * k)) MINUTES=5 SKIP_LIVE=1 \
      SERVER_FLAGS="--max_backlog_audio_s=$((32 * k * 300 + 600)) --host_threads=$((4 + 4 * k)) --work_threads=$((2 + 2 * k))" \
      bash bench/service_overhead/grpc_streams.sh 2>&1 | tee "$LOGS/k${k}_r${round}.log" | grep -E '^accurate:|server exit' | tr '\n' ' ')
    echo "k=$k round $round: $line" | tee -a "$LOGS/scaling.txt"
  done
done
python3 - "$LOGS/scaling.txt" <<'PY'
import re, sys, collections
runs = collections.defaultdict(list); ok = True
for l in open(sys.argv[1]):
    m = re.match(r"k=(\d+) round \d+: accurate: .*?aggregate RTFx ([\d.]+), failed (\d+), per device (\{.*?\}), distinct RTTMs (\d+).*server exit (\d+)", l.replace("\n", " "))
    if not m:
        print("unparsed:", l.strip()); ok = False; continue
    k, rtfx, failed, per, distinct, rc = m.groups()
    runs[int(k)].append(float(rtfx))
    ok = ok and failed == "0" and distinct == "1" and rc == "0"
base = sorted(runs.get(1, [float("nan")]))
for k in sorted(runs):
    v = sorted(runs[k])
    med1 = base[len(base) // 2]
    print(f"k={k}: RTFx {v[0]:.0f}-{v[-1]:.0f}; scaling vs 1 GPU (medians) {v[len(v)//2] / med1:.2f}x (target {0.9 * k:.1f}x)")
print("MULTI-GPU SCALING", "RUNS OK" if ok else "SOME RUN FAILED (see above)")
PY
