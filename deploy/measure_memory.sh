#!/usr/bin/env bash
# Measures what a replica needs, for the pod's memory request and limit
# (docs/operations.md, "Resources"): starts a server, sends N concurrent
# streams of FILE, and prints the peak resident memory of the process
# (VmHWM) idle, after the models load, and under that load, with the
# device memory the server reports.
#
#   deploy/measure_memory.sh SERVER_BINARY MODELS_DIR DEVICE FILE [N]
#   e.g. deploy/measure_memory.sh "$(bazel info bazel-bin)/server/diarization_server_cuda" \
#          /models cuda:0 talk.wav 8
#
# The client is //clients:diarize_client from the same bazel-bin.
set -euo pipefail
SERVER=${1:?server binary}; MODELS=${2:?models dir}; DEVICE=${3:?device}
FILE=${4:?audio file}; N=${5:-8}
CLIENT="$(dirname "$SERVER")/../clients/diarize_client"
WORK=$(mktemp -d)
"$SERVER" --models="$MODELS" --device="$DEVICE" --listen=127.0.0.1:0 \
  --metrics_listen=127.0.0.1:0 --port_file="$WORK/ports" 2>"$WORK/server.log" &
PID=$!
trap 'kill -TERM $PID 2>/dev/null || true; wait $PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 1 600); do [[ -s "$WORK/ports" ]] && break; sleep 0.1; done
read -r GRPC METRICS <"$WORK/ports"
rss() { awk '/VmRSS|VmHWM/{printf "%s %.0f MiB  ", $1, $2 / 1024}' "/proc/$PID/status"; echo; }
"$CLIENT" --server="127.0.0.1:$GRPC" --wait_for_serving_s=300 >/dev/null
echo "serving:        $(rss)"
CLIENTS=()
for i in $(seq 1 "$N"); do
  "$CLIENT" --server="127.0.0.1:$GRPC" --output=text --progress=false "$FILE" >"$WORK/out$i.txt" &
  CLIENTS+=($!)
done
failed=0
for c in "${CLIENTS[@]}"; do wait "$c" || failed=$((failed + 1)); done
echo "$N calls, $failed failed"
echo "after $N x $(basename "$FILE"): $(rss)"
curl -sf "http://127.0.0.1:$METRICS/metrics" |
  grep -E '^(process_resident_memory_bytes|diarization_device_memory_bytes|diarization_audio_seconds_total)' || true
