#!/usr/bin/env bash
# diarize_client's batch mode (--out_dir) against the real server: 40 short
# files with --jobs=4 and a backlog limit of 5 s of audio, so that calls are
# refused (RESOURCE_EXHAUSTED with a retry hint) and retried; the server is
# killed (SIGKILL) and restarted on the same port once mid-batch, so that
# calls fail with UNAVAILABLE and are retried. Every file must end with the
# RTTM of a single-file run, byte for byte; a second run skips them all; a
# corrupt file is reported (exit 7, listed in the summary) and not retried;
# with two replicas and round_robin the calls reach both.
source "$(dirname "$0")/testlib.sh"
fail() {
  echo "FAIL: $*" >&2
  [[ -n "${SERVER_LOG:-}" ]] && { echo "--- server log (last 20 lines)" >&2; tail -n 20 "$SERVER_LOG" >&2; }
  exit 1
}
json() {  # json FILE EXPR: a value from the JSON summary
  /usr/bin/python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"
}

make_models "$TMP/models"
LIMITS=(--max_backlog_audio_s=5 --max_request_backlog_share=1)
start_server "$TMP/models" "${LIMITS[@]}"
S="127.0.0.1:$GRPC_PORT"

# Five distinct 2.5 s clips of a two-voice conversation, eight files each.
speech_wav "$TMP/long.wav"
mkdir -p "$TMP/in/sub" "$TMP/ref"
for v in 0 1 2 3 4; do
  sox "$TMP/long.wav" "$TMP/ref/v$v.wav" trim "$((v * 3))" 2.5
  # The single-file reference (the uri is the file's stem: v$v).
  "$CLIENT_BIN" --server="$S" --mode=unary --deadline_s=120 "$TMP/ref/v$v.wav" >"$TMP/ref/v$v.rttm" ||
    fail "single-file run of v$v"
  [[ -s "$TMP/ref/v$v.rttm" ]] || fail "empty reference RTTM v$v"
done
for i in $(seq -w 0 39); do
  dir="$TMP/in"; [[ $((10#$i % 3)) -eq 0 ]] && dir="$TMP/in/sub"
  cp "$TMP/ref/v$((10#$i % 5)).wav" "$dir/clip$i.wav"
done
# Not audio: the server refuses it as INVALID_ARGUMENT.
{ printf 'RIFF\x24\x00\x00\x00WAVEfmt '; head -c 64 /dev/urandom; } >"$TMP/in/corrupt.wav"
OUT="$TMP/out"
batch() {  # batch RUN_NAME ARGS...: runs the batch; its exit code in $rc
  local name=$1; shift
  set +e
  timeout 600 "$CLIENT_BIN" --server="$S" --out_dir="$OUT" --jobs=4 --mode=unary \
    --max_attempts=60 --deadline_s=120 "$@" >"$TMP/$name.json" 2>"$TMP/$name.err"
  rc=$?
  set -e
  return $rc
}
expected() {  # expected N: the single-file RTTM of clipN's audio, named clipN
  sed "s/^SPEAKER v$((10#$1 % 5)) /SPEAKER clip$1 /" "$TMP/ref/v$((10#$1 % 5)).rttm"
}

# Run 1, in the background: kill the server once 10 files are done.
batch run1 "$TMP/in" &
BATCH_PID=$!
for _ in $(seq 1 600); do
  [[ $(find "$OUT" -name '*.rttm' 2>/dev/null | wc -l) -ge 10 ]] && break
  kill -0 "$BATCH_PID" 2>/dev/null || break
  sleep 0.1
done
[[ $(find "$OUT" -name '*.rttm' | wc -l) -lt 40 ]] || fail "the batch ended before the kill"
kill -KILL "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
killed_log="$SERVER_LOG"
start_server "$TMP/models" "${LIMITS[@]}" --listen="$S"
set +e
wait "$BATCH_PID"
rc=$?
set -e
[[ $rc -eq 7 ]] || fail "run 1 exit $rc, want 7 (the corrupt file): $(cat "$TMP/run1.err")"
echo "run 1: $(tail -n 4 "$TMP/run1.err")"
[[ $(json "$TMP/run1.json" 's["files"]') == 41 ]] || fail "files: $(cat "$TMP/run1.json")"
[[ $(json "$TMP/run1.json" 's["ok"]') == 40 ]] || fail "ok: $(cat "$TMP/run1.json")"
[[ $(json "$TMP/run1.json" 's["failed"]') == 1 ]] || fail "failed: $(cat "$TMP/run1.json")"
[[ $(json "$TMP/run1.json" 's["failed_files"][0]["status"]') == INVALID_ARGUMENT ]] || fail "$(cat "$TMP/run1.json")"
[[ $(json "$TMP/run1.json" 's["failed_files"][0]["attempts"]') == 1 ]] || fail "INVALID_ARGUMENT retried"
[[ $(json "$TMP/run1.json" 's["failed_files"][0]["path"]') == "$TMP/in/corrupt.wav" ]] || fail "$(cat "$TMP/run1.json")"
grep -q "^failed: $TMP/in/corrupt.wav: INVALID_ARGUMENT" "$TMP/run1.err" || fail "corrupt file not listed: $(cat "$TMP/run1.err")"
[[ $(json "$TMP/run1.json" 's["retried"].get("RESOURCE_EXHAUSTED", 0) > 0') == True ]] ||
  fail "no call was refused by the backlog limit: $(cat "$TMP/run1.json")"
[[ $(json "$TMP/run1.json" 's["retried"].get("UNAVAILABLE", 0) > 0') == True ]] ||
  fail "no call failed while the server was down: $(cat "$TMP/run1.json")"
grep -q '"code":"RESOURCE_EXHAUSTED"' "$killed_log" "$SERVER_LOG" || fail "the server refused nothing"
# Byte-identical to the single-file runs (the RTTM's uri is the file's stem).
for i in $(seq -w 0 39); do
  sub=""; [[ $((10#$i % 3)) -eq 0 ]] && sub="sub/"
  cmp "$OUT/${sub}clip$i.rttm" <(expected "$i") || fail "clip$i.rttm differs from its single-file run"
done
[[ -z "$(find "$OUT" -name '.*')" ]] || fail "temporary files left: $(find "$OUT" -name '.*')"

# Run 2: everything is skipped; the corrupt file fails again (exit 7).
batch run2 "$TMP/in" || true
[[ $rc -eq 7 ]] || fail "run 2 exit $rc, want 7: $(cat "$TMP/run2.err")"
[[ $(json "$TMP/run2.json" 's["skipped"]') == 40 ]] || fail "run 2: $(cat "$TMP/run2.json")"
[[ $(json "$TMP/run2.json" 's["failed"]') == 1 ]] || fail "run 2: $(cat "$TMP/run2.json")"

# Run 3: without the corrupt file, one output removed: it alone is redone,
# with its JSON (--batch_json); exit 0.
rm "$TMP/in/corrupt.wav" "$OUT/clip07.rttm"
batch run3 --batch_json "$TMP/in/clip07.wav" "$TMP/in/clip08.wav" || true
[[ $rc -eq 0 ]] || fail "run 3 exit $rc: $(cat "$TMP/run3.err")"
[[ $(json "$TMP/run3.json" 's["ok"]') == 2 ]] || fail "run 3 (clip08 has no JSON yet): $(cat "$TMP/run3.json")"
cmp "$OUT/clip07.rttm" <(expected 07) || fail "clip07 redone differs"
[[ $(json "$OUT/clip07.json" 's["request_id"] != ""') == True ]] || fail "clip07.json: $(head -c 300 "$OUT/clip07.json")"

# Stream mode (decoded here) gives the same RTTMs.
OUT="$TMP/out_stream"
batch run4 --mode=stream "$TMP/in/sub/clip00.wav" "$TMP/in/clip01.wav" "$TMP/in/clip02.wav" || true
[[ $rc -eq 0 ]] || fail "stream batch exit $rc: $(cat "$TMP/run4.err")"
for i in 00 01 02; do
  cmp "$OUT/clip$i.rttm" <(expected "$i") || fail "stream batch clip$i differs"
done

# Two replicas behind round_robin: the batch's calls spread over both.
FIRST_PID=$SERVER_PID FIRST_LOG=$SERVER_LOG
before=$(grep -c '"method":"DiarizeFile"' "$FIRST_LOG" || true)
start_server "$TMP/models"
trap 'stop_server; kill -TERM "$FIRST_PID" 2>/dev/null; wait "$FIRST_PID" 2>/dev/null || true' EXIT
OUT="$TMP/out_replicas"
# Eight files two at a time, so the calls span several seconds: round_robin
# sends a call only to replicas whose connection is already up, and on a
# loaded machine the first few calls can all go to one replica (seen in CI
# with four files at once: 0 and 4).
batch run5 --server="ipv4:$S,127.0.0.1:$GRPC_PORT" --lb_policy=round_robin --jobs=2 \
  "$TMP/in/clip01.wav" "$TMP/in/clip02.wav" "$TMP/in/clip04.wav" "$TMP/in/clip05.wav" \
  "$TMP/in/clip07.wav" "$TMP/in/clip08.wav" "$TMP/in/clip10.wav" "$TMP/in/clip11.wav" || true
[[ $rc -eq 0 ]] || fail "two-replica batch exit $rc: $(cat "$TMP/run5.err")"
first=$(( $(grep -c '"method":"DiarizeFile"' "$FIRST_LOG") - before ))
second=$(grep -c '"method":"DiarizeFile"' "$SERVER_LOG" || true)
echo "replicas: $first and $second calls"
[[ $first -ge 1 && $second -ge 1 ]] || fail "calls not spread: $first and $second"
for i in 01 02 04 05 07 08 10 11; do
  cmp "$OUT/clip$i.rttm" <(expected "$i") || fail "two-replica batch clip$i differs"
done
echo PASS
