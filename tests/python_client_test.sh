#!/usr/bin/env bash
# The Python example client (Debian python3-grpcio, stubs generated at run
# time) against a real server: streaming and unary give the same RTTM, GetInfo
# works, and a refused request gives the documented exit code.
source "$(dirname "$0")/testlib.sh"
PY_CLIENT="$RUNFILES/clients/python/diarize_client.py"
PROTO_ROOT="$RUNFILES/proto"

make_models "$TMP/models"
start_server "$TMP/models"
speech_wav "$TMP/talk.wav"
S="127.0.0.1:$GRPC_PORT"

/usr/bin/python3 "$PY_CLIENT" --proto_root="$PROTO_ROOT" --server="$S" --info >"$TMP/info.json"
grep -q '"random_weights": true' "$TMP/info.json" || fail "GetInfo: $(cat "$TMP/info.json")"

/usr/bin/python3 "$PY_CLIENT" --proto_root="$PROTO_ROOT" --server="$S" --partial "$TMP/talk.wav" >"$TMP/stream.rttm"
/usr/bin/python3 "$PY_CLIENT" --proto_root="$PROTO_ROOT" --server="$S" --mode=unary "$TMP/talk.wav" >"$TMP/unary.rttm"
[[ -s "$TMP/stream.rttm" ]] || fail "empty RTTM from the stream"
grep -q '^SPEAKER talk 1 ' "$TMP/stream.rttm" || fail "bad RTTM: $(head -3 "$TMP/stream.rttm")"
diff "$TMP/stream.rttm" "$TMP/unary.rttm" || fail "stream and unary RTTM differ"
# The same as the C++ client's.
"$CLIENT_BIN" --server="$S" --mode=unary "$TMP/talk.wav" >"$TMP/cpp.rttm"
diff "$TMP/cpp.rttm" "$TMP/unary.rttm" || fail "Python and C++ clients differ"

# A contradictory hint: INVALID_ARGUMENT → exit 3.
set +e
/usr/bin/python3 "$PY_CLIENT" --proto_root="$PROTO_ROOT" --server="$S" \
  --min_speakers=3 --max_speakers=2 "$TMP/talk.wav" 2>"$TMP/err.txt"
rc=$?
set -e
[[ $rc -eq 3 ]] || fail "expected exit 3, got $rc: $(cat "$TMP/err.txt")"
grep -q INVALID_ARGUMENT "$TMP/err.txt" || fail "$(cat "$TMP/err.txt")"
echo PASS
