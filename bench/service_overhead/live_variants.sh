#!/usr/bin/env bash
# On the GPU machine: the live step of grpc_streams.sh (64 paced streams,
# final after the half-close, partials behind the audio, the server's tail_*
# breakdown) under several server flag sets, one server per set, in one
# call. The payload is unpacked once.
#   run: carry [".device/service-overhead.tar.xz"],
#        command "bash bench/service_overhead/live_variants.sh"
# VARIANTS: "name|server flags" entries separated by ';' (default below:
# today's flags, then one BLAS thread per clustering, then also 16 host
# threads and 4 callback threads). BUDGET_S (540): no variant starts once
# this many seconds have passed (a variant takes about 150-180 s).
# STREAMS, LIVE_MINUTES as grpc_streams.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
BASE="--max_backlog_audio_s=40000 --host_threads=8"
VARIANTS=${VARIANTS:-"today|$BASE;blas1|$BASE --clustering_blas_threads=1;blas1-h16|--max_backlog_audio_s=40000 --host_threads=16 --clustering_blas_threads=1 --callback_threads=4"}
BUDGET_S=${BUDGET_S:-540}
ROOT_OUT=${OUT:-$(pwd)/gpu-logs}
PAYLOAD=$(mktemp -d /tmp/live_variants.XXXXXX)
trap 'rm -rf "$PAYLOAD"' EXIT
tar -C "$PAYLOAD" -xJf .device/service-overhead.tar.xz || { echo "no payload"; exit 2; }
start=$SECONDS
IFS=';' read -ra list <<<"$VARIANTS"
for v in "${list[@]}"; do
  name=${v%%|*}
  flags=${v#*|}
  if ((SECONDS - start > BUDGET_S)); then
    echo "== $name: not started (budget of $BUDGET_S s spent)"
    continue
  fi
  echo "== $name: $flags"
  OUT="$ROOT_OUT/$name" PAYLOAD_DIR="$PAYLOAD" SKIP_THROUGHPUT=1 \
    SERVER_FLAGS="$flags" bash bench/service_overhead/grpc_streams.sh
  echo "== $name: $((SECONDS - start)) s so far"
done
