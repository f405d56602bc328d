#!/usr/bin/env bash
# On the GPU machine: two server builds A/B in one call, through
# grpc_streams.sh's throughput step (64 concurrent 10-minute streams,
# accurate then FAST). The builds run alternately, A B A B ..., $PAIRS (2)
# pairs, each in a fresh server process on the same machine. The script
# prints, for each run, the aggregate RTFx of both modes and the server's
# own batch time per stage and its batch counts (from /metrics). Then, for
# each mode, the ratio B/A pair by pair and its median.
#
#   A: $SERVER_A (default the payload's bin/diarization_server_cuda_baseline)
#   B: $SERVER_B (default the payload's bin/diarization_server_cuda)
# Payload: bench/service_overhead/pack_gpu.sh with
# BASELINE_SERVER=path/to/an/older/diarization_server_cuda (that server
# goes into the archive as bin/diarization_server_cuda_baseline). The
# caller's PAYLOAD_DIR (staged payload), SERVER_FLAGS, STREAMS and MINUTES
# pass through to grpc_streams.sh.
#   run: carry [".device/service-overhead.tar.xz"],
#        command "bash bench/service_overhead/grpc_streams_ab.sh"
set -uo pipefail
cd "$(dirname "$0")/../.."
LOGS=${OUT:-$(pwd)/gpu-logs}/grpc_streams_ab
mkdir -p "$LOGS"
if [[ -z "${PAYLOAD_DIR:-}" ]]; then
  PAYLOAD_DIR=$(mktemp -d /tmp/grpc_streams_ab.XXXXXX)
  trap 'rm -rf "$PAYLOAD_DIR"' EXIT
  tar -C "$PAYLOAD_DIR" -xJf .device/service-overhead.tar.xz || { echo "no payload"; exit 2; }
fi
export PAYLOAD_DIR
SERVER_A=${SERVER_A:-$PAYLOAD_DIR/bin/diarization_server_cuda_baseline}
SERVER_B=${SERVER_B:-$PAYLOAD_DIR/bin/diarization_server_cuda}
for s in "$SERVER_A" "$SERVER_B"; do
  [[ -x "$s" ]] || { echo "no server binary $s"; exit 2; }
done
PAIRS=${PAIRS:-2}
for p in $(seq "$PAIRS"); do
  for side in A B; do
    bin=$SERVER_A; [[ $side == B ]] && bin=$SERVER_B
    run=$LOGS/pair${p}_$side
    mkdir -p "$run"
    SERVER_BIN=$bin SKIP_LIVE=1 OUT=$run bash bench/service_overhead/grpc_streams.sh >"$run/grpc.txt" 2>&1
    echo "pair $p $side: exit $?" >>"$LOGS/runs.txt"
  done
done
python3 - "$LOGS" "$PAIRS" <<'PY' | tee "$LOGS/summary.txt"
import re, statistics, sys
logs, pairs = sys.argv[1], int(sys.argv[2])
rtfx_re = re.compile(r"^(accurate|fast): .* aggregate RTFx ([0-9.]+), failed (\d+).*distinct RTTMs (\d+)")
metric_re = re.compile(r'^diarization_(processing_seconds_sum\{stage="(segmentation|embedding)"\}|batch_size_count\{[^}]*model="(segmentation|embedding)"\}) ([0-9.e+]+)')
runs = {}
for p in range(1, pairs + 1):
    for side in "AB":
        d = f"{logs}/pair{p}_{side}/grpc_streams"
        r = {}
        try:
            for l in open(f"{d}/summary.txt"):
                m = rtfx_re.match(l)
                if m:
                    r[m.group(1)] = float(m.group(2))
                    r[m.group(1) + "_bad"] = int(m.group(3)) > 0 or int(m.group(4)) != 1
            for l in open(f"{d}/metrics.txt"):
                m = metric_re.match(l)
                if m:
                    stage = m.group(2) or m.group(3)
                    kind = "busy_s" if m.group(2) else "batches"
                    r[f"{stage}_{kind}"] = float(m.group(4))
        except OSError as e:
            print(f"pair {p} {side}: {e}")
        runs[(p, side)] = r
        bad = " (a failed stream or more than one RTTM)" if r.get("accurate_bad") or r.get("fast_bad") else ""
        print(f"pair {p} {side}: accurate RTFx {r.get('accurate', float('nan')):.1f}, FAST {r.get('fast', float('nan')):.1f}; "
              f"batch time segmentation {r.get('segmentation_busy_s', float('nan')):.1f} s in {r.get('segmentation_batches', 0):.0f} batches, "
              f"embedding {r.get('embedding_busy_s', float('nan')):.1f} s in {r.get('embedding_batches', 0):.0f}{bad}")
for mode in ("accurate", "fast"):
    ratios = [runs[(p, "B")][mode] / runs[(p, "A")][mode] for p in range(1, pairs + 1)
              if mode in runs[(p, "A")] and mode in runs[(p, "B")]]
    if ratios:
        print(f"{mode}: RTFx B/A per pair {', '.join(f'{x:.3f}' for x in ratios)}; median {statistics.median(ratios):.3f}")
PY
