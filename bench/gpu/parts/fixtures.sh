#!/usr/bin/env bash
# Part "fixtures" of bench/gpu/round.sh: each fixture recording diarized with
# the payload's backend, real segmentation-3.0 weights (real/, when packed),
# the seed-1 random embedding and the real PLDA, and each RTTM compared byte
# for byte with the reference: REFERENCE_RTTM (default .device/cpu_rttm),
# which this same part writes when run here with the CPU backend:
#   here:  KITS=cpu OUTPUT_BASE= REAL_MODELS_DIR=DIR tools/device/pack.sh
#          DEVICE=cpu PARTS=fixtures bash bench/gpu/round.sh
#          tar -C .device -xf gpu-logs/rttm.tar && mv .device/rttm .device/cpu_rttm
#   GPU:   carry [".device/payload.tar.xz", ".device/cpu_rttm"], PARTS=fixtures
# On the GPU: rtfx_main in the server's configuration, once per VARIANTS
# entry (";"-separated "name|backend flags"; default tf32 and fp32); on the
# CPU: tools/diarize. The RTTMs come back in $OUT/rttm.tar (rttm/NAME.VARIANT
# .rttm), rewritten after every file. FIXTURES: a space-separated subset.
set -uo pipefail
: "${WORK:?run through bench/gpu/round.sh}"
source tools/device/kits.sh
REF=${REFERENCE_RTTM:-$PWD/.device/cpu_rttm}
mkdir -p "$WORK/rttm"
real=()
[[ -f "$WORK/real/segmentation.safetensors" ]] && real=(--segmentation_from "$WORK/real/segmentation.safetensors")
if [[ $DEVICE == cpu ]]; then
  VARIANTS=${VARIANTS:-"cpu|"}
  "$B/make_random_models" --out "$WORK/fixture_models" --seed 1 --plda_from "$WORK/plda" \
    ${real[@]+"${real[@]}"} >"$PART_OUT/models.log" 2>&1 || { echo "  make_random_models failed"; exit 1; }
else
  VARIANTS=${VARIANTS:-"tf32|;fp32|--cuda_embedding_precision=fp32"}
fi
IFS=';' read -ra variant_list <<<"$VARIANTS"
same=0 compared=0
read -r -a files <<<"${FIXTURES:-${FIXTURE_FILES[*]}}"
for f in "${files[@]}"; do
  name=$(echo "$f" | tr '/' '_')
  for v in "${variant_list[@]}"; do
    vname=${v%%|*} vflags=${v#*|}
    out=$WORK/rttm/$name.$vname.rttm
    if [[ $DEVICE == cpu ]]; then
      # shellcheck disable=SC2086  # flags are words by design
      timeout 600 "$B/diarize" --audio "$WORK/data/$f" --models "$WORK/fixture_models" \
        --uri clip_16k --device=cpu $vflags --out "$out" >"$PART_OUT/$name.$vname.log" 2>&1
    else
      # shellcheck disable=SC2086
      TMPDIR="$WORK/tmp" timeout 120 "$B/rtfx_main" --data "$WORK/data" --plda "$WORK/plda" \
        --files "$f" --hours 0 --repeats 1 --device="$DEVICE" $vflags \
        ${real[@]+--segmentation_weights "$WORK/real/segmentation.safetensors"} \
        --rttm_out "$out" >"$PART_OUT/$name.$vname.log" 2>&1
    fi
    rc=$?
    verdict=null ref=$REF/$name.rttm
    [[ -f $ref ]] || ref=$REF/$name.cpu.rttm
    if [[ -f $ref ]]; then
      compared=$((compared + 1))
      if cmp -s "$out" "$ref"; then same=$((same + 1)); verdict=true; else verdict=false; fi
    fi
    echo "{\"part\": \"fixtures\", \"file\": \"$name\", \"variant\": \"$vname\", \"rc\": $rc, \"lines\": $(grep -c . "$out" 2>/dev/null || echo 0), \"same_as_reference\": $verdict}"
    tar -C "$WORK" -cf "$OUT/rttm.tar" rttm
  done
done
echo "{\"part\": \"fixtures\", \"step\": \"total\", \"compared\": $compared, \"identical\": $same}"
echo "  fixture RTTMs: $same of $compared byte-identical to $REF"
