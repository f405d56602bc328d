#!/usr/bin/env bash
# On the GPU machine: diarizes each fixture recording with the CUDA backend
# (real segmentation-3.0 weights from the payload, seed-1 random embedding
# weights, real PLDA) in each variant asked for, and packs the RTTMs into
# $OUT/fixture_rttms.tar for comparison with the CPU backend (tools/diarize)
# and pyannote's recorded pipeline output.
#   run: carry [".device/payload.tar.xz"], command "bash bench/gpu/fixture_rttms.sh"
# VARIANTS: ";"-separated "name|rtfx_main flags" (default: fp32 and tf32
# embeddings, legacy trunk), e.g.
#   VARIANTS="tf32|--embedding_precision=tf32;graph|--embedding_precision=tf32 --conv_api=graph"
# The older form still works: PRECISIONS (default "fp32 tf32") picks the
# embedding precisions and RTFX_EXTRA adds flags to all of them.
# The tar is rewritten after every file, so what finished before a time
# limit comes back; BUDGET_S (default 400) stops starting new runs after
# that many seconds.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(pwd)/gpu-logs}
WORK=$(mktemp -d)
tar -C "$WORK" -xJf .device/payload.tar.xz || exit 2
export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$WORK/rttm" "$OUT"
if [[ -z "${VARIANTS:-}" ]]; then
  VARIANTS=""
  for p in ${PRECISIONS:-fp32 tf32}; do
    VARIANTS+="${VARIANTS:+;}$p|--embedding_precision=$p ${RTFX_EXTRA:-}"
  done
fi
IFS=';' read -ra VARIANT_LIST <<<"$VARIANTS"
start=$SECONDS
for f in findit-dia-parity/02_pyannote_sample/clip_16k.wav \
         findit-dia-parity/03_dual_speaker/clip_16k.wav \
         findit-dia-parity/04_three_speaker/clip_16k.wav \
         findit-dia-parity/05_four_speaker/clip_16k.wav \
         speakrs-fixtures/test.wav speakrs-fixtures/test_3speakers.wav \
         speakrs-fixtures/test_single_speaker.wav speakrs-fixtures/test_short.wav; do
  name=$(echo "$f" | tr '/' '_')
  for v in "${VARIANT_LIST[@]}"; do
    vname=${v%%|*}; vflags=${v#*|}
    if (( SECONDS - start > ${BUDGET_S:-400} )); then
      echo "$name $vname skipped (budget ${BUDGET_S:-400} s spent)"; continue
    fi
    # shellcheck disable=SC2086  # vflags are words by design
    TMPDIR="$WORK" timeout 120 "$WORK/bin/rtfx_main" --data "$WORK/data" --plda "$WORK/plda" \
      --files "$f" --hours 0 --repeats 1 $vflags \
      --segmentation_weights "$WORK/real/segmentation.safetensors" \
      --rttm_out "$WORK/rttm/$name.$vname.rttm" >"$WORK/rttm/$name.$vname.log" 2>&1
    echo "$name $vname rc=$? $(grep -c . "$WORK/rttm/$name.$vname.rttm" 2>/dev/null) lines"
    tar -C "$WORK" -cf "$OUT/fixture_rttms.tar" rttm
  done
done
