#!/usr/bin/env bash
# On the GPU machine, one call: the round's checks and timings from the one
# archive tools/device/pack_round.sh makes, each step through the script
# that owns it, skipped (and said so) when its usual time no longer fits the
# call. Every machine start costs one to two minutes of the session's 30,
# and the device tool brings back at most 8 files, so everything lands in
# one tar.
#
#   here:  REAL_MODELS_DIR=DIR tools/device/pack_round.sh
#          MODELS=DIR bash bench/gpu/cpu_fixture_rttms.sh   # for "fixtures"
#   run:   carry [".device"], command "bash bench/gpu/session_round.sh"
#
# PARTS (default "tests fixtures rtfx server"), in the order given:
#   qualify   bench/qualify/gpu_round.sh PARTS="sanitizer qualify" (285 s
#             seen for both parts in one call, but 251 s for the sanitizers
#             alone in another, so it asks for 420 s;
#             $OUT/qualification.json is the record to commit);
#             QUALIFY_PARTS=qualify runs the harness alone (its whole-network
#             check and timings, ~150 s asked): without the sanitizers it
#             qualifies nothing, so its record is not one to commit
#   tests     bench/gpu/verify_round.sh PARTS=tests (~300 s; with TESTS
#             and/or CUDA_MODELS_FILTER set, which verify_round.sh reads,
#             ~60 s is asked)
#   fixtures  bench/gpu/verify_round.sh PARTS=fixtures (~100 s; needs
#             .device/cpu_rttm)
#   rtfx      bench/gpu/rtfx_variants.sh, $RTFX_VARIANTS (default: the
#             default configuration alone), ROUNDS=1 (~70 s)
#   server    bench/service_overhead/grpc_streams.sh, 64 streams of 10
#             minutes, accurate and FAST, no live step (~60 s)
#   server_ab the server step with the baseline build's server
#             (.device/baseline/diarization_server_cuda, the same payload
#             otherwise) and the payload's, alternated A B A B ...,
#             $SERVER_PAIRS (2) pairs, each run ~60 s
#   server_variants  the server step once per line of $SERVER_VARIANTS
#             ("name|server flags|client flags"), $SERVER_ROUNDS (1) rounds,
#             each run ~60 s (TIMELINE=1: worker states per half second)
#   rtfx_ab   bench/gpu/rtfx_ab.sh against .device/baseline/rtfx_main,
#             $RTFX_PAIRS (2) pairs (~120 s)
#   live      bench/service_overhead/grpc_streams.sh's live step alone: 64
#             streams of 2 minutes paced at real time into one server, final
#             result after each half-close and partials behind the audio,
#             p50/p99 (~170 s)
#   ratio     bench/gpu/ratio_ab.sh: rtfx_main against pyannote.audio on the
#             same hour, $RATIO_PAIRS (3) alternating pairs, median ratio
#             (~190-250 s; needs .whl from tools/device/fetch_wheels.sh,
#             carried too: carry [".device", ".whl"]; with the full round
#             archive that is over the 64 MiB carry, so run
#             tools/device/slim_round.sh first, which keeps the binaries of
#             ratio, live, server, server_ab, rtfx and rtfx_ab)
#   profile   ncu's time of every kernel of a short rtfx_main run (121
#             windows, production's engines from a warmed engine cache),
#             split by stage with bench/gpu/pass_split.py (~70 s)
# REAL_SEGMENTATION=1: the server parts (server, server_ab,
# server_variants, live) run on the payload's real segmentation weights
# with a random embedding, so the clustering sees a trained segmentation's
# output; default random weights for both, as in every round before
# 2026-12-04's ninth (their RTTM md5s change with it).
# BUDGET_S (default 570): the call's whole time. Output under $OUT:
# summary.txt, qualification.json (if made), round.tgz (every step's logs).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$(pwd)/gpu-logs}
LOGS=$(mktemp -d /tmp/session_round.XXXXXX)
SUMMARY=$OUT/summary.txt
mkdir -p "$OUT"
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
start=$SECONDS
BUDGET_S=${BUDGET_S:-570}
PARTS=${PARTS:-tests fixtures rtfx server}
[[ -f .device/round.tar.xz ]] || { say "session_round.sh: no .device/round.tar.xz (tools/device/pack_round.sh)"; exit 2; }
# A baseline build for the A/B parts, carried compressed (the device tool
# carries 64 MiB): .device/baseline.tar.xz holding baseline/<binary>.
if [[ -f .device/baseline.tar.xz ]]; then
  tar -C .device -xJf .device/baseline.tar.xz || say "session_round.sh: .device/baseline.tar.xz did not unpack"
fi
# The step scripts read their own archive names; all are this one.
ln -sf round.tar.xz .device/payload.tar.xz
ln -sf round.tar.xz .device/qualify.tar.xz
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1); commit $(tar -xJOf .device/round.tar.xz commit 2>/dev/null || echo unknown)"

# left: seconds of the budget left.
left() { echo $((BUDGET_S - (SECONDS - start))); }
# fits NAME SECONDS: whether a step of about SECONDS still fits the budget;
# says so when it does not.
fits() {
  if (($(left) < $2)); then
    say "SKIPPED $1: needs about $2 s, $(left) s left"
    return 1
  fi
}

# run_grpc_streams LOG OUT [VAR=VALUE ...]: bench/service_overhead/
# grpc_streams.sh with OUT and the given variables, its output in LOG, on the
# round's payload staged outside $LOGS (which is packed at the end; the
# script copies bin, lib, data and plda out of it); its exit status. With
# REAL_SEGMENTATION=1 the server's models take the payload's real
# segmentation weights (grpc_streams.sh SEGMENTATION_FROM).
run_grpc_streams() {
  local log=$1 out=$2 payload rc real=()
  shift 2
  payload=$(mktemp -d /tmp/session_round_payload.XXXXXX)
  tar -C "$payload" -xJf .device/round.tar.xz bin lib data plda
  if [[ "${REAL_SEGMENTATION:-0}" == 1 ]]; then
    tar -C "$payload" -xJf .device/round.tar.xz real/segmentation.safetensors &&
      real=(SEGMENTATION_FROM="$payload/real/segmentation.safetensors")
  fi
  env OUT="$out" PAYLOAD_DIR="$payload" ${real[@]+"${real[@]}"} "$@" timeout "$(left)" \
    bash bench/service_overhead/grpc_streams.sh >"$log" 2>&1
  rc=$?
  rm -rf "$payload"
  return $rc
}

# server_step LABEL NAME [VAR=VALUE ...]: grpc_streams.sh's throughput steps
# (no live step) with the given variables, output in $LOGS/NAME.log, LABEL
# and its exit status in the summary with each step's aggregate, the stage
# threads' busy and GPU seconds and, with TIMELINE=1, the timeline.
server_step() {
  local label=$1 name=$2 s=$SECONDS
  shift 2
  run_grpc_streams "$LOGS/$name.log" "$LOGS/$name" SKIP_LIVE=1 "$@"
  say "$label rc=$? $((SECONDS - s)) s"
  grep -E "^(accurate|fast):|    cuda:0   (embedding|segmentation) +(busy|GPU)|timeline|^    [ 0-9.]+-" \
    "$LOGS/$name.log" | tee -a "$SUMMARY"
}

# run_pairs PART SCRIPT PAIRS PATTERN: a script that alternates two builds
# (rtfx_ab.sh, ratio_ab.sh) with OUT=$LOGS and PAIRS, its output in
# $LOGS/PART.log, and the lines matching PATTERN in the summary.
run_pairs() {
  local part=$1 script=$2 pairs=$3 pattern=$4 s=$SECONDS
  OUT=$LOGS PAIRS=$pairs timeout "$(left)" bash "$script" >"$LOGS/$part.log" 2>&1
  say "$part rc=$? $((SECONDS - s)) s"
  grep -E "$pattern" "$LOGS/$part.log" | tee -a "$SUMMARY"
}

for part in $PARTS; do
  s=$SECONDS
  case $part in
    qualify)
      qparts=${QUALIFY_PARTS:-sanitizer qualify}
      fits qualify "$([[ $qparts == *sanitizer* ]] && echo 420 || echo 150)" || continue
      OUT=$LOGS/qualify PARTS="$qparts" BUDGET_S=$(($(left) - 20)) \
        timeout "$(left)" bash bench/qualify/gpu_round.sh >"$LOGS/qualify.log" 2>&1
      say "qualify rc=$? $((SECONDS - s)) s"
      grep -E "sanitizer|QUALIFY SUMMARY|SKIPPED" "$LOGS/qualify/summary.txt" 2>/dev/null | tee -a "$SUMMARY"
      cp "$LOGS/qualify/qualification.json" "$OUT/" 2>/dev/null
      ;;
    tests | fixtures)
      need=100
      if [[ $part == tests ]]; then
        need=300
        [[ -n "${TESTS:-}${CUDA_MODELS_FILTER:-}" ]] && need=60
      fi
      fits "$part" "$need" || continue
      OUT=$LOGS/$part PARTS=$part FIXTURE_BUDGET_S=$(($(left) - 10)) \
        timeout "$(left)" bash bench/gpu/verify_round.sh >"$LOGS/$part.log" 2>&1
      say "$part rc=$? $((SECONDS - s)) s"
      grep -v "^gpu:" "$LOGS/$part/summary.txt" 2>/dev/null | tee -a "$SUMMARY"
      ;;
    rtfx)
      fits rtfx 70 || continue
      OUT=$LOGS VARIANTS=${RTFX_VARIANTS:-"default|"} ROUNDS=${ROUNDS:-1} \
        timeout "$(left)" bash bench/gpu/rtfx_variants.sh >"$LOGS/rtfx.log" 2>&1
      say "rtfx rc=$? $((SECONDS - s)) s"
      grep -E "^round|^summary|^  [A-Za-z0-9_]+ \[" "$LOGS/rtfx.log" | tee -a "$SUMMARY"
      grep -h "layer1" "$LOGS"/rtfx_variants/*_1.log 2>/dev/null | head -2 | tee -a "$SUMMARY"
      ;;
    server)
      fits server 60 || continue
      run_grpc_streams "$LOGS/server.log" "$LOGS" SKIP_LIVE=1
      say "server rc=$? $((SECONDS - s)) s"
      grep -E "^(accurate|fast):|worker states|busy|batches|device_rtfx|arena_peak|server exit" \
        "$LOGS/server.log" | tee -a "$SUMMARY"
      grep -hiE "layer1" "$LOGS/grpc_streams/server.log" 2>/dev/null | head -1 | cut -c1-300 | tee -a "$SUMMARY"
      ;;
    server_ab)
      base=$(pwd)/.device/baseline/diarization_server_cuda
      [[ -x "$base" ]] || { say "SKIPPED server_ab: no $base"; continue; }
      for i in $(seq "${SERVER_PAIRS:-2}"); do
        for b in A B; do
          fits "server_ab $b$i" 60 || break 2
          bin=()
          [[ $b == A ]] && bin=(SERVER_BIN="$base")
          server_step "server_ab $b$i" "server_$b$i" ${bin[@]+"${bin[@]}"}
        done
      done
      ;;
    server_variants)
      # One line per variant of $SERVER_VARIANTS, "name|server flags|client
      # flags" (empty server flags: grpc_streams.sh's default), each the
      # server step on the payload's build, all variants once per round,
      # $SERVER_ROUNDS (1) rounds; with TIMELINE=1 each step's worker
      # states per half second.
      for r in $(seq "${SERVER_ROUNDS:-1}"); do
        while IFS='|' read -r name sflags cflags; do
          [[ -z "$name" ]] && continue
          fits "server_variants $name $r" 60 || break 2
          vars=(CLIENT_FLAGS="$cflags")
          [[ -n "$sflags" ]] && vars+=(SERVER_FLAGS="$sflags")
          server_step "server_variants $name $r [server: ${sflags:-default}; client: ${cflags:-default}]" \
            "server_${name}_$r" "${vars[@]}"
        done <<<"${SERVER_VARIANTS:-default||}"
      done
      ;;
    rtfx_ab)
      fits rtfx_ab 120 || continue
      run_pairs rtfx_ab bench/gpu/rtfx_ab.sh "${RTFX_PAIRS:-2}" "^run |RTFx [0-9]|B/A|warm-up"
      ;;
    live)
      fits live 170 || continue
      run_grpc_streams "$LOGS/live.log" "$LOGS/live" SKIP_THROUGHPUT=1
      say "live rc=$? $((SECONDS - s)) s"
      grep -E "^live|^  live|tail_s |worker states during live|busy|server exit" \
        "$LOGS/live.log" | tee -a "$SUMMARY"
      ;;
    ratio)
      [[ -d .whl ]] || { say "SKIPPED ratio: no .whl (tools/device/fetch_wheels.sh, carry it)"; continue; }
      fits ratio 250 || continue
      run_pairs ratio bench/gpu/ratio_ab.sh "${RATIO_PAIRS:-3}" "^pair|median|ratio"
      ;;
    profile)
      fits profile 70 || continue
      (
        source bench/gpu/rtfx_default.sh
        rtfx_unpack_payload session_round.sh
        NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
        [[ -n "$NCU" ]] || { echo "no ncu"; exit 2; }
        short=(--hours 0.036 --repeats=1 --graphs=false)
        # The first run times the graph engines and writes the cache; the
        # profiled one reads it, so its trunk runs production's engines and
        # ncu's log holds no timing launches.
        rtfx_default "$WORK/bin/rtfx_main" "$LOGS/profile_warm.log" 1 "$WORK/engines.tsv" \
          "${short[@]}" || exit 1
        # The same command under ncu (pass_split.py reads only its CSV
        # lines among rtfx_main's own output).
        RTFX_LAUNCHER="timeout $(left) $NCU --csv --page raw --metrics gpu__time_duration.sum" \
          rtfx_default "$WORK/bin/rtfx_main" "$LOGS/profile.csv" 1 "$WORK/engines.tsv" \
          "${short[@]}"
        rc=$?
        rm -rf "$WORK"
        exit $rc
      ) >"$LOGS/profile.log" 2>&1
      say "profile rc=$? $((SECONDS - s)) s"
      /usr/bin/python3 bench/gpu/pass_split.py "$LOGS/profile.csv" --top 6 | tee -a "$SUMMARY"
      ;;
    *)
      say "session_round.sh: unknown part '$part' (qualify tests fixtures rtfx server server_ab server_variants rtfx_ab live ratio profile)"
      ;;
  esac
done
say "session_round.sh: $((SECONDS - start)) s"
tar -C "$LOGS" -czf "$OUT/round.tgz" . 2>/dev/null
rm -f .device/payload.tar.xz .device/qualify.tar.xz
