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
echo PASS
