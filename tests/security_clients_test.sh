#!/usr/bin/env bash
# The three clients (C++ CLI, the Python package, Go) against a real server with mutual
# TLS and tokens, certificates made by openssl for this run: each one works
# with the CA, its client certificate and a token; each is refused without
# a token (exit 6 / UNAUTHENTICATED), with a token not allowed the method
# (PERMISSION_DENIED) and without a client certificate (no connection).
# Health is checked without a token; reflection is off (Go). The metrics
# endpoint serves HTTPS, needs a token listing "metrics" for /metrics, keeps
# /healthz open, and picks up a rotated certificate.
source "$(dirname "$0")/testlib.sh"
PY_CLIENT="$RUNFILES/clients/python/examples/diarize_client.py"
PROTO_ROOT="$RUNFILES/proto"
python_client_venv "$TMP/pyvenv"
C="$TMP/certs"
bash "$RUNFILES/tests/make_test_certs.sh" "$C"

# Tokens: "all" given by its SHA-256 (the file then holds no secret),
# "info-only" in clear.
all_token=$(openssl rand -hex 24)
info_token=$(openssl rand -hex 24)
printf '%s\n' "$all_token" >"$TMP/all.token"
printf '%s\n' "$info_token" >"$TMP/info.token"
all_sha=$(printf '%s' "$all_token" | sha256sum | cut -d' ' -f1)
cat >"$TMP/tokens.json" <<JSON
{"tokens": [
  {"name": "all", "sha256": "$all_sha", "methods": ["*"]},
  {"name": "info-only", "token": "$info_token", "methods": ["GetInfo"]}
]}
JSON

make_models "$TMP/models"
TLS=(--tls_ca="$C/ca.pem" --tls_cert="$C/client.pem" --tls_key="$C/client.key")
WAIT_CLIENT_FLAGS=("${TLS[@]}")
# The server's own copies of its certificate: replaced below to rotate.
mkdir -p "$TMP/tls"
cp "$C/server.pem" "$TMP/tls/cert.pem"
cp "$C/server.key" "$TMP/tls/key.pem"
start_server "$TMP/models" --tls_cert="$TMP/tls/cert.pem" --tls_key="$TMP/tls/key.pem" \
  --tls_client_ca="$C/ca.pem" --auth_tokens="$TMP/tokens.json" --metrics_tls --tls_refresh_s=1
speech_wav "$TMP/talk.wav"
S="127.0.0.1:$GRPC_PORT"

# expect_exit CODE LOG_SUBSTRING cmd...: runs cmd, checks its exit code and
# that stderr names the reason.
expect_exit() {
  local want=$1 text=$2; shift 2
  set +e
  "$@" >"$TMP/out.txt" 2>"$TMP/err.txt"
  local rc=$?
  set -e
  [[ $rc -eq $want ]] || fail "expected exit $want, got $rc from $*: $(cat "$TMP/err.txt")"
  grep -q "$text" "$TMP/err.txt" || fail "no '$text' in: $(cat "$TMP/err.txt")"
}

echo "== C++ CLI"
"$CLIENT_BIN" --server="$S" "${TLS[@]}" --token_file="$TMP/info.token" --info >"$TMP/info.json"
grep -q '"random_weights": true' "$TMP/info.json" || fail "GetInfo: $(cat "$TMP/info.json")"
"$CLIENT_BIN" --server="$S" "${TLS[@]}" --token_file="$TMP/all.token" --mode=unary "$TMP/talk.wav" >"$TMP/cpp_unary.rttm"
"$CLIENT_BIN" --server="$S" "${TLS[@]}" --token="$all_token" "$TMP/talk.wav" >"$TMP/cpp_stream.rttm"
grep -q '^SPEAKER talk 1 ' "$TMP/cpp_unary.rttm" || fail "bad RTTM: $(head -3 "$TMP/cpp_unary.rttm")"
diff "$TMP/cpp_unary.rttm" "$TMP/cpp_stream.rttm" || fail "C++ unary and stream differ"
expect_exit 6 UNAUTHENTICATED "$CLIENT_BIN" --server="$S" "${TLS[@]}" --mode=unary "$TMP/talk.wav"
expect_exit 6 UNAUTHENTICATED "$CLIENT_BIN" --server="$S" "${TLS[@]}" --token="$(openssl rand -hex 24)" --info
expect_exit 6 PERMISSION_DENIED "$CLIENT_BIN" --server="$S" "${TLS[@]}" --token_file="$TMP/info.token" "$TMP/talk.wav"
# No client certificate; a certificate from another CA; plaintext.
expect_exit 4 UNAVAILABLE "$CLIENT_BIN" --server="$S" --tls_ca="$C/ca.pem" --token_file="$TMP/all.token" --info --deadline_s=10
expect_exit 4 UNAVAILABLE "$CLIENT_BIN" --server="$S" --tls_ca="$C/ca.pem" \
  --tls_cert="$C/other_client.pem" --tls_key="$C/other_client.key" --token_file="$TMP/all.token" --info --deadline_s=10
expect_exit 4 UNAVAILABLE "$CLIENT_BIN" --server="$S" --token_file="$TMP/all.token" --info --deadline_s=10
# Health needs no token (the probe's view).
"$CLIENT_BIN" --server="$S" "${TLS[@]}" --wait_for_serving_s=5 || fail "health without a token"

echo "== Python"
PY=("$TMP/pyvenv/bin/python" "$PY_CLIENT" --server="$S" "${TLS[@]}")
"${PY[@]}" --token_file="$TMP/all.token" --mode=unary "$TMP/talk.wav" >"$TMP/py_unary.rttm"
diff "$TMP/cpp_unary.rttm" "$TMP/py_unary.rttm" || fail "Python and C++ clients differ"
"${PY[@]}" --token="$info_token" --info >"$TMP/py_info.json"
grep -q '"random_weights": true' "$TMP/py_info.json" || fail "Python GetInfo: $(cat "$TMP/py_info.json")"
expect_exit 6 UNAUTHENTICATED "${PY[@]}" --info
expect_exit 6 PERMISSION_DENIED "${PY[@]}" --token_file="$TMP/info.token" --mode=unary "$TMP/talk.wav"
expect_exit 4 UNAVAILABLE "$TMP/pyvenv/bin/python" "$PY_CLIENT" --server="$S" --retries=0 \
  --tls_ca="$C/ca.pem" --token_file="$TMP/all.token" --info --deadline_s=10
# The package's API itself: mutual TLS and a token file, a stream and a file.
"$TMP/pyvenv/bin/python" - "$S" "$C" "$TMP/all.token" "$TMP/talk.wav" "$TMP/cpp_unary.rttm" <<'PY' ||
import sys
import grpc
from diarization_client import Client, DiarizationError, NO_RETRY, wav_chunks
server, certs, token_file, wav, expected = sys.argv[1:]
tls = dict(ca_file=f"{certs}/ca.pem", cert_file=f"{certs}/client.pem", key_file=f"{certs}/client.key")
with Client(server, token_file=token_file, timeout_s=120, **tls) as client:
    assert client.diarize_file(wav).rttm == open(expected).read(), "file over mTLS"
    rate, channels, chunks = wav_chunks(wav)
    assert client.diarize_stream(chunks, rate, uri="talk").rttm == open(expected).read(), "stream"
with Client(server, timeout_s=30, retry=NO_RETRY, **tls) as client:
    try:
        client.info()
        raise AssertionError("GetInfo without a token was served")
    except DiarizationError as e:
        assert e.code == grpc.StatusCode.UNAUTHENTICATED, e
print("package over mutual TLS with a token: ok")
PY
  fail "the Python package over mutual TLS with a token"

echo "== Go"
export GO111MODULE=off GOFLAGS= GOPROXY=off
export GOPATH="$TMP/gopath:/usr/share/gocode" GOCACHE="$TMP/gocache" HOME="$TMP"
mkdir -p "$TMP/gopath/src/interop"
protoc -I"$PROTO_ROOT" --plugin=protoc-gen-go=/usr/bin/protoc-gen-go \
  --go_out=plugins=grpc:"$TMP/gopath/src" "$PROTO_ROOT/diarization/v1/diarization.proto"
cp "$RUNFILES/clients/go/interop/main.go" "$TMP/gopath/src/interop/"
go build -o "$TMP/interop" interop
GO=("$TMP/interop" -server="$S" -wav="$TMP/talk.wav" -tls_ca="$C/ca.pem"
  -tls_cert="$C/client.pem" -tls_key="$C/client.key" -expect_reflection=false -timeout=2m)
"$CLIENT_BIN" --server="$S" "${TLS[@]}" --token_file="$TMP/all.token" --uri=interop "$TMP/talk.wav" >"$TMP/expected.rttm"
"${GO[@]}" -token_file="$TMP/all.token" -expect_rttm="$TMP/expected.rttm" | tee "$TMP/go.out"
grep -q "all checks passed" "$TMP/go.out" || fail "Go client with TLS and a token"
"${GO[@]}" -expect_code=Unauthenticated | tee "$TMP/go.out"
grep -q "refused with Unauthenticated" "$TMP/go.out" || fail "Go client without a token"
"${GO[@]}" -token="$info_token" -expect_code=PermissionDenied | tee "$TMP/go.out"
grep -q "refused with PermissionDenied" "$TMP/go.out" || fail "Go client, GetInfo-only token"
# The Go client's checks can fail: without a client certificate it cannot
# connect (bounded by -timeout).
if "$TMP/interop" -server="$S" -wav="$TMP/talk.wav" -tls_ca="$C/ca.pem" \
  -token_file="$TMP/all.token" -timeout=5s >/dev/null 2>&1; then
  fail "the Go client connected without a client certificate"
fi

echo "== metrics endpoint"
M="https://127.0.0.1:$METRICS_PORT"
http_code() { curl -sS --max-time 10 --cacert "$C/ca.pem" -o "$TMP/body.txt" -w '%{http_code}' "$@" || true; }
[[ $(http_code "$M/metrics") == 401 ]] || fail "/metrics without a token: $(cat "$TMP/body.txt")"
[[ $(http_code -H "Authorization: Bearer $info_token" "$M/metrics") == 403 ]] ||
  fail "/metrics with a token not listing metrics: $(cat "$TMP/body.txt")"
[[ $(http_code -H "Authorization: Bearer $all_token" "$M/metrics") == 200 ]] ||
  fail "/metrics with the token: $(cat "$TMP/body.txt")"
grep -q '^diarization_requests_total' "$TMP/body.txt" || fail "no metrics in the scrape"
grep -q 'code="UNAUTHENTICATED"' "$TMP/body.txt" && fail "refused calls must not reach the handlers"
[[ $(http_code "$M/healthz") == 200 ]] || fail "/healthz: $(cat "$TMP/body.txt")"
grep -q '^SERVING' "$TMP/body.txt" || fail "/healthz body: $(cat "$TMP/body.txt")"
if curl -sS --max-time 5 -o /dev/null "http://127.0.0.1:$METRICS_PORT/healthz" 2>/dev/null; then
  fail "the metrics endpoint answered plain HTTP"
fi
subject() {  # the CN the port serves now
  openssl s_client -connect "127.0.0.1:$1" -CAfile "$C/ca.pem" -alpn h2 \
    -cert "$C/client.pem" -key "$C/client.key" </dev/null 2>/dev/null |
    openssl x509 -noout -subject 2>/dev/null | sed 's/.*CN *= *//'
}
[[ $(subject "$METRICS_PORT") == server-1 ]] || fail "metrics port serves '$(subject "$METRICS_PORT")'"
cp "$C/server2.key" "$TMP/tls/key.new" && mv "$TMP/tls/key.new" "$TMP/tls/key.pem"
cp "$C/server2.pem" "$TMP/tls/cert.new" && mv "$TMP/tls/cert.new" "$TMP/tls/cert.pem"
for _ in $(seq 1 100); do
  [[ $(subject "$METRICS_PORT") == server-2 && $(subject "$GRPC_PORT") == server-2 ]] && break
  sleep 0.2
done
[[ $(subject "$METRICS_PORT") == server-2 ]] || fail "the metrics port kept the old certificate"
[[ $(subject "$GRPC_PORT") == server-2 ]] || fail "the gRPC port kept the old certificate"
[[ $(http_code -H "Authorization: Bearer $all_token" "$M/metrics") == 200 ]] ||
  fail "/metrics after the rotation: $(cat "$TMP/body.txt")"
"$CLIENT_BIN" --server="$S" "${TLS[@]}" --token_file="$TMP/info.token" --info >/dev/null ||
  fail "gRPC after the rotation"

grep -q '"auth_refused"' "$SERVER_LOG" || fail "refusals are not logged"
if grep -q -e "$all_token" -e "$info_token" "$SERVER_LOG"; then
  fail "a token reached the server log"
fi
echo PASS
