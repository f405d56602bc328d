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
# Every call has a deadline, and a failure shows the server's log: one run
# of this test once hung after the stream's first partial result (CI
# rehearsal, 2026-12-03) and said no more until the 900 s test timeout.
py() { /usr/bin/python3 "$PY_CLIENT" --proto_root="$PROTO_ROOT" --server="$S" --deadline_s=120 "$@"; }
fail() { echo "FAIL: $*" >&2; echo "--- server log (last 40 lines)" >&2; tail -n 40 "$SERVER_LOG" >&2; exit 1; }

py --info >"$TMP/info.json" || fail "GetInfo failed"
grep -q '"random_weights": true' "$TMP/info.json" || fail "GetInfo: $(cat "$TMP/info.json")"

py --partial "$TMP/talk.wav" >"$TMP/stream.rttm" || fail "the streaming call failed"
py --mode=unary "$TMP/talk.wav" >"$TMP/unary.rttm" || fail "the unary call failed"
[[ -s "$TMP/stream.rttm" ]] || fail "empty RTTM from the stream"
grep -q '^SPEAKER talk 1 ' "$TMP/stream.rttm" || fail "bad RTTM: $(head -3 "$TMP/stream.rttm")"
diff "$TMP/stream.rttm" "$TMP/unary.rttm" || fail "stream and unary RTTM differ"
# The same as the C++ client's.
"$CLIENT_BIN" --server="$S" --mode=unary "$TMP/talk.wav" >"$TMP/cpp.rttm" || fail "the C++ client failed"
diff "$TMP/cpp.rttm" "$TMP/unary.rttm" || fail "Python and C++ clients differ"

# A contradictory hint: INVALID_ARGUMENT → exit 3.
set +e
py --min_speakers=3 --max_speakers=2 "$TMP/talk.wav" 2>"$TMP/err.txt"
rc=$?
set -e
[[ $rc -eq 3 ]] || fail "expected exit 3, got $rc: $(cat "$TMP/err.txt")"
grep -q INVALID_ARGUMENT "$TMP/err.txt" || fail "$(cat "$TMP/err.txt")"
echo PASS
