#!/usr/bin/env bash
# Service overhead: the same audio file through the engine in-process
# (engine_direct) and through gRPC on loopback (diarization server +
# diarize_client), same models, device and engine options. Prints both
# JSON results, the per-request overhead and whether the RTTMs are equal.
#
#   bench/service_overhead/run.sh --audio FILE --models DIR
#       [--device cpu|cuda:N] [--requests N] [--mode unary|stream|both]
#       [--threads N]
#
# Environment: BAZEL (default "bazel"; add e.g. "--output_base=..."),
# SERVER_TARGET (default //server:diarization_server),
# ENGINE_TARGET (default //bench/service_overhead:engine_direct; use
# engine_direct_cuda for cuda:N), SKIP_BUILD=1 to use built binaries,
# BIN_DIR=DIR to take all binaries from one folder (no Bazel; a payload of tools/device/pack.sh).
#
# The gRPC latency of a request is the wall time of one diarize_client
# process; the same client's GetInfo call is timed as a baseline (process
# start, channel set-up, one round trip) and reported separately, so
# "overhead_minus_baseline" is what the service layer adds per request on a
# warm connection to decode-and-serialize work.
set -euo pipefail

AUDIO="" MODELS="" DEVICE=cpu REQUESTS=5 MODE=both THREADS=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --audio) AUDIO=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --requests) REQUESTS=$2; shift 2 ;;
    --mode) MODE=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$AUDIO" && -n "$MODELS" ]] || {
  echo "usage: run.sh --audio FILE --models DIR [--device D] [--requests N] [--mode unary|stream|both]" >&2
  exit 2
}
AUDIO=$(realpath "$AUDIO")
MODELS=$(realpath "$MODELS")

BAZEL=${BAZEL:-bazel}
SERVER_TARGET=${SERVER_TARGET:-//server:diarization_server}
ENGINE_TARGET=${ENGINE_TARGET:-//bench/service_overhead:engine_direct}
CLIENT_TARGET=//clients:diarize_client
cd "$(dirname "$0")/../.."
if [[ -n "${BIN_DIR:-}" ]]; then
  path_of() { echo "$BIN_DIR/${1##*:}"; }
else
  if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    $BAZEL build "$ENGINE_TARGET" "$SERVER_TARGET" "$CLIENT_TARGET" >&2
  fi
  BIN=$($BAZEL info bazel-bin 2>/dev/null)
  path_of() { local t=${1#//}; echo "$BIN/${t%%:*}/${t##*:}"; }
fi
ENGINE_BIN=$(path_of "$ENGINE_TARGET")
SERVER_BIN=$(path_of "$SERVER_TARGET")
CLIENT_BIN=$(path_of "$CLIENT_TARGET")

WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

now() { date +%s.%N; }
modes=("$MODE"); [[ "$MODE" == both ]] && modes=(unary stream)

# --- engine direct ---
declare -A ENGINE_LAT
for m in "${modes[@]}"; do
  json=$("$ENGINE_BIN" --audio "$AUDIO" --models "$MODELS" --device "$DEVICE" \
    --threads "$THREADS" --mode "$m" --requests "$REQUESTS" \
    --rttm_out "$WORK/engine_$m.rttm")
  echo "$json"
  ENGINE_LAT[$m]=$(sed -E 's/.*"latency_mean_s":([0-9.]+).*/\1/' <<<"$json")
done

# --- gRPC on loopback ---
"$SERVER_BIN" --models "$MODELS" --device "$DEVICE" --threads "$THREADS" \
  --listen 127.0.0.1:0 --metrics_listen "" --port_file "$WORK/ports" \
  2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 1 600); do [[ -s "$WORK/ports" ]] && break; sleep 0.1; done
[[ -s "$WORK/ports" ]] || { echo "server did not start:" >&2; cat "$WORK/server.log" >&2; exit 1; }
PORT=$(cut -d' ' -f1 "$WORK/ports")
ADDR=127.0.0.1:$PORT
"$CLIENT_BIN" --server "$ADDR" --wait_for_serving_s 300 --info >/dev/null

t0=$(now); "$CLIENT_BIN" --server "$ADDR" --info >/dev/null; t1=$(now)
BASELINE=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", b-a}')

for m in "${modes[@]}"; do
  "$CLIENT_BIN" --server "$ADDR" --mode "$m" --output rttm "$AUDIO" >/dev/null  # warm-up
  total=0
  for _ in $(seq 1 "$REQUESTS"); do
    t0=$(now)
    "$CLIENT_BIN" --server "$ADDR" --mode "$m" --output rttm "$AUDIO" >"$WORK/grpc_$m.rttm"
    t1=$(now)
    total=$(awk -v s="$total" -v a="$t0" -v b="$t1" 'BEGIN{printf "%.6f", s+b-a}')
  done
  grpc=$(awk -v s="$total" -v n="$REQUESTS" 'BEGIN{printf "%.4f", s/n}')
  engine=${ENGINE_LAT[$m]}
  same=no
  # The RTTM uri column may differ (client: file stem; engine: file stem).
  if diff -q <(awk '{$2="X"; print}' "$WORK/engine_$m.rttm") \
             <(awk '{$2="X"; print}' "$WORK/grpc_$m.rttm") >/dev/null; then
    same=yes
  fi
  awk -v m="$m" -v e="$engine" -v g="$grpc" -v b="$BASELINE" -v s="$same" -v d="$DEVICE" 'BEGIN{
    printf "{\"path\":\"grpc_loopback\",\"mode\":\"%s\",\"device\":\"%s\",\"latency_mean_s\":%.4f,", m, d, g;
    pct = (e > 0) ? 100 * (g - e) / e : 0;
    printf "\"engine_direct_latency_mean_s\":%.4f,\"overhead_s\":%.4f,\"overhead_pct\":%.1f,", e, g - e, pct;
    printf "\"client_baseline_s\":%.4f,\"overhead_minus_baseline_s\":%.4f,\"rttm_identical\":\"%s\"}\n", b, g-e-b, s }'
done
