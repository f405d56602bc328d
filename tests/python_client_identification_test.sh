#!/usr/bin/env bash
# The Python client's voiceprints, known-speaker identification, both views
# and stable labels (ADR 0091) against the real server (CPU backend) with
# the REAL segmentation weights and random embedding weights
# (DIARIZATION_REAL_MODELS_DIR; scripts/test.sh makes and passes it, as for
# identification_e2e_test). The wheel is built and installed into a fresh
# venv as in python_client_test.sh; tests/python_client_identification_checks.py
# compares the package's answers with the C++ CLI's for the same requests.
source "$(dirname "$0")/testlib.sh"

MODELS="${DIARIZATION_REAL_MODELS_DIR:-}"
DATA="${DIARIZATION_TEST_DATA:-}"
[[ -n "$MODELS" && -f "$MODELS/segmentation.safetensors" ]] ||
  fail "DIARIZATION_REAL_MODELS_DIR ('$MODELS') is not a real-weights model directory (scripts/test.sh makes one)"
FIXTURE="$DATA/findit-dia-parity/02_pyannote_sample/clip_16k.wav"
[[ -f "$FIXTURE" ]] || fail "no fixture $FIXTURE (set DIARIZATION_TEST_DATA)"

python_client_venv "$TMP/venv"
start_server "$MODELS" --threads=2
# As identification_e2e_test: 12-30 s of the fixture, where pyannote's
# reference has SPEAKER_01 alone from 21.766 s to 28.499 s, i.e. 9.8-16.4 s
# of the clip.
mkdir -p "$TMP/id"
sox "$FIXTURE" -b 16 "$TMP/id/clip.wav" trim 12 18
fail() { echo "FAIL: $*" >&2; echo "--- server log (last 40 lines)" >&2; tail -n 40 "$SERVER_LOG" >&2; exit 1; }
timeout 900 "$TMP/venv/bin/python" "$RUNFILES/tests/python_client_identification_checks.py" \
  --server="127.0.0.1:$GRPC_PORT" --cli="$CLIENT_BIN" --clip="$TMP/id/clip.wav" \
  --stretch=9.8-16.4 --tmp="$TMP/id" || fail "python_client_identification_checks.py"

# The example script: its voiceprint file is the CLI's, and identification
# with it (among the same decoys) prints the CLI's RTTM, exclusive RTTM and
# identity lines.
D="$TMP/id"
EXAMPLE="$RUNFILES/clients/python/examples/diarize_client.py"
py() { timeout 300 "$TMP/venv/bin/python" "$EXAMPLE" --server="127.0.0.1:$GRPC_PORT" --deadline_s=300 "$@"; }
py --enroll "$D/clip.wav" --speech 9.8-16.4 --out "$D/example.vp" || fail "example: --enroll"
cmp "$D/example.vp" "$D/cli.vp" || fail "the example's voiceprint file is not the CLI's"
py --mode=unary --known "alice=$D/example.vp,decoy_a=$D/decoy_a.vp,decoy_b=$D/decoy_b.vp" \
  --exclusive_out "$D/example_excl.rttm" "$D/clip.wav" >"$D/example.rttm" 2>"$D/example.err" ||
  fail "example: --known: $(cat "$D/example.err")"
diff "$D/cli_known.rttm" "$D/example.rttm" || fail "example and CLI RTTMs differ"
diff "$D/cli_excl.rttm" "$D/example_excl.rttm" || fail "example and CLI exclusive RTTMs differ"
grep '^identity ' "$D/example.err" | diff "$D/cli_known.identities" - ||
  fail "example and CLI identities differ"
grep -q '^identity alice best=alice .* matched$' "$D/example.err" || fail "$(cat "$D/example.err")"
set +e
py --mode=unary --known "alice=$D/clip.wav" "$D/clip.wav" 2>"$D/err.txt"
rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "voiceprint $D/clip.wav: not a serialized Voiceprint" "$D/err.txt" ||
  fail "a WAV file as a voiceprint: expected exit 2 (local ValueError), got $rc: $(cat "$D/err.txt")"
echo PASS
