#!/usr/bin/env bash
# The metrics endpoint scraped by a real Prometheus server (Debian's
# `prometheus`, on loopback with a temporary config and a 1 s scrape
# interval), then queried through Prometheus' HTTP API for the RTFx and
# memory series, request counts, and the target's health.
source "$(dirname "$0")/testlib.sh"

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# query EXPR: prints the first sample's value ("" when none).
query() {
  curl -sfG "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
    /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}

# wait_for EXPR PYTHON_CONDITION_ON_v: polls up to 60 s.
wait_for() {
  local v=""
  for _ in $(seq 1 120); do
    v=$(query "$1" || true)
    if [[ -n "$v" ]] && /usr/bin/python3 -c "import sys; v=float('$v'); sys.exit(0 if ($2) else 1)"; then
      echo "$1 = $v"
      return 0
    fi
    sleep 0.5
  done
  fail "$1: got '$v', wanted $2"
}

make_models "$TMP/models"
start_server "$TMP/models"
speech_wav "$TMP/talk.wav"
"$CLIENT_BIN" --server="127.0.0.1:$GRPC_PORT" "$TMP/talk.wav" >/dev/null
"$CLIENT_BIN" --server="127.0.0.1:$GRPC_PORT" --mode=unary "$TMP/talk.wav" >/dev/null

# The raw endpoint first.
curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" >"$TMP/metrics.txt"
grep -q '^diarization_request_rtfx_count 2' "$TMP/metrics.txt" || fail "$(grep rtfx "$TMP/metrics.txt")"

cat >"$TMP/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: diarization
    static_configs:
      - targets: ["127.0.0.1:$METRICS_PORT"]
YAML
promtool check config "$TMP/prometheus.yml" >/dev/null

PROM_PID=""
for attempt in 1 2 3 4 5; do
  PROM_PORT=$(free_port)
  prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb.$attempt" \
    --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn 2>"$TMP/prometheus.$attempt.log" &
  PROM_PID=$!
  ok=0
  for _ in $(seq 1 100); do
    if curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null 2>&1; then ok=1; break; fi
    kill -0 "$PROM_PID" 2>/dev/null || break
    sleep 0.2
  done
  [[ $ok == 1 ]] && break
  kill "$PROM_PID" 2>/dev/null || true
  wait "$PROM_PID" 2>/dev/null || true
  PROM_PID=""
done
[[ -n "$PROM_PID" ]] || fail "prometheus did not start: $(cat "$TMP"/prometheus.*.log)"
trap 'kill $PROM_PID 2>/dev/null || true; stop_server' EXIT

wait_for 'up{job="diarization"}' 'v == 1'
wait_for 'diarization_request_rtfx_count{job="diarization"}' 'v == 2'
wait_for 'diarization_request_rtfx_sum{job="diarization"} / diarization_request_rtfx_count{job="diarization"}' 'v > 0'
wait_for 'histogram_quantile(0.5, sum by (le) (diarization_request_rtfx_bucket{job="diarization"}))' 'v > 0'
wait_for 'sum(diarization_requests_total{job="diarization",code="OK",method=~"Diarize|DiarizeFile"})' 'v == 2'
wait_for 'diarization_audio_seconds_total{job="diarization",device="cpu"}' 'v > 10'
wait_for 'process_resident_memory_bytes{job="diarization"}' 'v > 50e6'
wait_for 'diarization_backlog_audio_seconds{job="diarization"}' 'v == 0'
wait_for 'diarization_build_info{job="diarization"}' 'v == 1'
echo PASS
