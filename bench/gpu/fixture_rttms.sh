#!/usr/bin/env bash
# On the GPU machine: diarizes each fixture recording with the CUDA backend
# (real segmentation-3.0 weights from the payload, seed-1 random embedding
# weights, real PLDA), once with FP32 and once with TF32 embeddings, and packs
# the RTTMs into $OUT/fixture_rttms.tar for comparison with the CPU backend
# (tools/diarize) and pyannote's recorded pipeline output.
#   run: carry [".device/payload.tar.xz"], command "bash bench/gpu/fixture_rttms.sh"
# PRECISIONS (default "fp32 tf32") picks the embedding precisions;
# RTFX_EXTRA adds rtfx_main flags (e.g. --fused_epilogue=false, to compare
# two code paths' RTTMs in one call).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(pwd)/gpu-logs}
WORK=$(mktemp -d)
tar -C "$WORK" -xJf .device/payload.tar.xz || exit 2
export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$WORK/rttm"
for f in findit-dia-parity/02_pyannote_sample/clip_16k.wav \
         findit-dia-parity/03_dual_speaker/clip_16k.wav \
         findit-dia-parity/04_three_speaker/clip_16k.wav \
         findit-dia-parity/05_four_speaker/clip_16k.wav \
         speakrs-fixtures/test.wav speakrs-fixtures/test_3speakers.wav \
         speakrs-fixtures/test_single_speaker.wav speakrs-fixtures/test_short.wav; do
  name=$(echo "$f" | tr '/' '_')
  for p in ${PRECISIONS:-fp32 tf32}; do
    TMPDIR="$WORK" timeout 120 "$WORK/bin/rtfx_main" --data "$WORK/data" --plda "$WORK/plda" \
      --files "$f" --hours 0 --repeats 1 --embedding_precision "$p" \
      --segmentation_weights "$WORK/real/segmentation.safetensors" \
      --rttm_out "$WORK/rttm/$name.$p.rttm" ${RTFX_EXTRA:-} >"$WORK/rttm/$name.$p.log" 2>&1
    echo "$name $p rc=$? $(grep -c . "$WORK/rttm/$name.$p.rttm" 2>/dev/null) lines"
  done
done
mkdir -p "$OUT"
tar -C "$WORK" -cf "$OUT/fixture_rttms.tar" rttm
