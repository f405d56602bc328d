# Shared by the shell end-to-end tests: make a random-weights model directory,
# start the real server on 127.0.0.1 with free ports, stop it. Source it.
#   RUNFILES: the test's runfiles root for this workspace.
set -euo pipefail

RUNFILES="${TEST_SRCDIR:-$PWD/..}/diarization"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
SERVER_BIN="$RUNFILES/server/diarization_server"
CLIENT_BIN="$RUNFILES/clients/diarize_client"
MAKE_MODELS_BIN="$RUNFILES/tools/make_random_models/make_random_models"
SERVER_PID=""

fail() { echo "FAIL: $*" >&2; exit 1; }

# The real community-1 PLDA: $DIARIZATION_MODELS_DIR/community-1-plda, else
# ../shared/models beside the source tree. Missing data fails the test.
plda_dir() {
  local d="${DIARIZATION_MODELS_DIR:-}"
  if [[ -z "$d" ]]; then
    local src
    src=$(dirname "$(readlink -f "$RUNFILES/WORKSPACE")")
    d="$(dirname "$src")/shared/models"
  fi
  [[ -d "$d/community-1-plda" ]] || fail "no PLDA at $d/community-1-plda (set DIARIZATION_MODELS_DIR)"
  echo "$d/community-1-plda"
}

make_models() {  # make_models DIR
  "$MAKE_MODELS_BIN" --out="$1" --plda_from="$(plda_dir)" >/dev/null
}

# start_server MODELS [flags...]: sets GRPC_PORT, METRICS_PORT, SERVER_PID,
# SERVER_LOG; waits for health SERVING (via the CLI client, with the flags in
# the array WAIT_CLIENT_FLAGS, e.g. --tls_ca for a TLS server).
WAIT_CLIENT_FLAGS=()
start_server() {
  local models=$1; shift
  local ports="$TMP/ports.$$.$RANDOM"
  SERVER_LOG="$TMP/server.$$.$RANDOM.log"
  "$SERVER_BIN" --models="$models" --device=cpu --listen=127.0.0.1:0 \
    --metrics_listen=127.0.0.1:0 --port_file="$ports" "$@" 2>"$SERVER_LOG" &
  SERVER_PID=$!
  trap stop_server EXIT
  for _ in $(seq 1 1200); do
    [[ -s "$ports" ]] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$SERVER_LOG" >&2; fail "server exited"; }
    sleep 0.1
  done
  read -r GRPC_PORT METRICS_PORT <"$ports"
  "$CLIENT_BIN" --server="127.0.0.1:$GRPC_PORT" ${WAIT_CLIENT_FLAGS[@]+"${WAIT_CLIENT_FLAGS[@]}"} \
    --wait_for_serving_s=120 ||
    { cat "$SERVER_LOG" >&2; fail "server never SERVING"; }
}

stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || true
  fi
  SERVER_PID=""
}

# speech_wav OUT: a short two-voice conversation made with espeak-ng + sox
# (16-bit, 16 kHz, mono).
speech_wav() {
  local out=$1 d="$TMP/speech.$RANDOM"
  mkdir -p "$d"
  espeak-ng -v en-us -s 160 -w "$d/a.wav" "Good morning. I would like to talk about the schedule for the next release of the service."
  espeak-ng -v en-gb+f3 -p 75 -s 150 -w "$d/b.wav" "Sure. The tests are green, so we can ship it on Thursday after the review."
  sox "$d/a.wav" "$d/b.wav" "$d/a.wav" -r 16000 -c 1 -b 16 "$out"
}
