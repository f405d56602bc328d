# The default end-to-end configuration of rtfx_main on the GPU machine, sourced
# by bench/gpu/ratio_ab.sh ("ours" against pyannote) and bench/gpu/rtfx_ab.sh
# (a build against its baseline), so both time the same thing: 1 h of audio,
# TF32 embeddings, batch 32, stages overlapped, the real segmentation weights
# of the payload.
#
#   source bench/gpu/rtfx_default.sh
#   rtfx_unpack_payload NAME            # sets WORK (the payload unpacked)
#   rtfx_take_baseline NAME             # $BASELINE -> WORK/bin/rtfx_main_baseline
#   rtfx_default BIN LOG REPEATS CACHE [FLAG ...]
#   rtfx_of LOG                         # the run's end-to-end RTFx

# rtfx_unpack_payload NAME: unpacks .device/payload.tar.xz into a fresh WORK,
# or exits 2 saying which script had no payload.
rtfx_unpack_payload() {
  WORK=$(mktemp -d)
  tar -C "$WORK" -xJf .device/payload.tar.xz || { echo "$1: no payload"; exit 2; }
}

# rtfx_take_baseline NAME: copies the baseline build's rtfx_main
# ($BASELINE, default .device/baseline/rtfx_main) beside the payload's, as
# WORK/bin/rtfx_main_baseline, or exits 2 saying which script had none.
rtfx_take_baseline() {
  BASELINE=${BASELINE:-.device/baseline/rtfx_main}
  [[ -x "$BASELINE" ]] || { echo "$1: no baseline binary at $BASELINE"; exit 2; }
  cp "$BASELINE" "$WORK/bin/rtfx_main_baseline"
}

# rtfx_default BIN LOG REPEATS CACHE [FLAG ...]: BIN on the payload's data,
# PLDA and real segmentation weights, with its conv engine cache at CACHE,
# output to LOG; 240 s at most. RTFX_LAUNCHER (words, e.g. a profiler's
# command line) goes in front of BIN when set.
rtfx_default() {
  local bin=$1 log=$2 repeats=$3 cache=$4
  shift 4
  # shellcheck disable=SC2086  # RTFX_LAUNCHER is words by design
  LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" TMPDIR="$WORK" \
    timeout 240 ${RTFX_LAUNCHER:-} "$bin" --data "$WORK/data" --plda "$WORK/plda" --hours 1 \
    --embedding_precision=tf32 --batch=32 --overlap --timed_algos --repeats="$repeats" \
    --conv_engine_cache="$cache" \
    --segmentation_weights="$WORK/real/segmentation.safetensors" "$@" >"$log" 2>&1
}

rtfx_of() { sed -n 's/.*RTFx end to end \([0-9.]*\);.*/\1/p' "$1"; }
