#!/usr/bin/env bash
# Bounded soak of the real server (docs/reliability.md): starts
# diarization_server on 127.0.0.1 with a random-weights model directory,
# runs soak_client (N paced streams for T minutes, each restarting when its
# result is in), stops the server with SIGTERM and checks it drained and
# exited 0. Prints the client's JSON summary; exits non-zero when a result
# was lost, memory grew, or the server did not exit cleanly.
#
#   bench/soak/soak.sh --streams 4 --minutes 2              # CPU, here
#   BIN_DIR=... bench/soak/soak.sh --device cuda:0 --streams 64 --minutes 5
#
# BIN_DIR: where diarization_server(_cuda), soak_client and
# make_random_models are (default: build them with bazel). Other options are
# passed to soak_client (--speed, --chunk_s, --connections ...).
set -euo pipefail
cd "$(dirname "$0")/../.."
DEVICE=cpu
AUDIO=""
MODELS=""
SERVER_FLAGS=()
CLIENT_ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --device) DEVICE="$2"; shift 2 ;;
    --audio) AUDIO="$2"; shift 2 ;;
    --models) MODELS="$2"; shift 2 ;;
    --server_flag) SERVER_FLAGS+=("$2"); shift 2 ;;
    *) CLIENT_ARGS+=("$1"); shift ;;
  esac
done
WORK=$(mktemp -d)
SERVER_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

SERVER_NAME=diarization_server
[[ "$DEVICE" == cuda* ]] && SERVER_NAME=diarization_server_cuda
if [[ -z "${BIN_DIR:-}" ]]; then
  bazel build //server:$SERVER_NAME //bench/soak:soak_client \
    //tools/make_random_models >&2
  BAZEL_BIN=$(bazel info bazel-bin 2>/dev/null)
  BIN_DIR="$WORK/bin"
  mkdir -p "$BIN_DIR"
  cp -L "$BAZEL_BIN/server/$SERVER_NAME" "$BAZEL_BIN/bench/soak/soak_client" \
    "$BAZEL_BIN/tools/make_random_models/make_random_models" "$BIN_DIR/"
fi
if [[ -z "$MODELS" ]]; then
  PLDA=${PLDA_DIR:-$(pwd)/../shared/models/community-1-plda}
  MODELS="$WORK/models"
  "$BIN_DIR/make_random_models" --out "$MODELS" --plda_from "$PLDA" >&2
fi
if [[ -z "$AUDIO" ]]; then
  AUDIO=${DIARIZATION_TEST_DATA:-$(pwd)/../shared/data}/pyannote-audio/sample/sample.wav
fi

"$BIN_DIR/$SERVER_NAME" --models "$MODELS" --device "$DEVICE" \
  --listen 127.0.0.1:0 --metrics_listen 127.0.0.1:0 \
  --port_file "$WORK/ports" --drain_timeout_s 120 ${SERVER_FLAGS[@]+"${SERVER_FLAGS[@]}"} \
  2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 1200); do
  [[ -s "$WORK/ports" ]] && break
  kill -0 "$SERVER_PID" || { cat "$WORK/server.log"; exit 1; }
  sleep 0.1
done
read -r GRPC_PORT METRICS_PORT <"$WORK/ports"
for _ in $(seq 1200); do
  grep -q '"event":"serving"' "$WORK/server.log" && break
  kill -0 "$SERVER_PID" || { cat "$WORK/server.log"; exit 1; }
  sleep 0.1
done
echo "server pid $SERVER_PID on $GRPC_PORT (metrics $METRICS_PORT), device $DEVICE" >&2

rc=0
"$BIN_DIR/soak_client" --target "127.0.0.1:$GRPC_PORT" \
  --metrics "127.0.0.1:$METRICS_PORT" --audio "$AUDIO" \
  ${CLIENT_ARGS[@]+"${CLIENT_ARGS[@]}"} || rc=$?

kill -TERM "$SERVER_PID"
server_rc=0
wait "$SERVER_PID" || server_rc=$?
SERVER_PID=""
non_json=$(grep -cv '^{' "$WORK/server.log" || true)
codes=$(grep '"method":"Diarize"' "$WORK/server.log" |
  grep -o '"code":"[A-Z_]*"' | sort | uniq -c | tr '\n' ' ' || true)
echo "server: exit $server_rc, non-JSON log lines $non_json, Diarize codes: $codes" >&2
if [[ $server_rc -ne 0 || $non_json -ne 0 ]]; then
  if [[ $non_json -ne 0 ]]; then
    echo "non-JSON log lines (first 5):" >&2
    grep -v '^{' "$WORK/server.log" | head -5 >&2
  fi
  tail -20 "$WORK/server.log" >&2
  rc=1
fi
exit $rc
