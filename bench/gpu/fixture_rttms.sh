#!/usr/bin/env bash
# On the GPU machine: diarizes each fixture recording with the CUDA backend
# (real segmentation-3.0 weights from the payload, seed-1 random embedding
# weights, real PLDA) in each variant asked for, and packs the RTTMs into
# $OUT/fixture_rttms.tar for comparison with the CPU backend (tools/diarize)
# and pyannote's recorded pipeline output. With the CPU backend's RTTMs
# carried (bench/gpu/cpu_fixture_rttms.sh here, .device/cpu_rttm), each RTTM
# is compared byte for byte on the spot and a summary line counts them.
#   run: carry [".device/payload.tar.xz", ".device/cpu_rttm"],
#        command "bash bench/gpu/fixture_rttms.sh"
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
source bench/gpu/fixture_files.sh
CPU_RTTM=${CPU_RTTM_DIR:-.device/cpu_rttm}  # cpu_fixture_rttms.sh, carried
same=0; compared=0
for f in "${FIXTURE_FILES[@]}"; do
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
    rc=$?
    verdict=""
    if [[ -f "$CPU_RTTM/$name.rttm" ]]; then
      compared=$((compared + 1))
      if cmp -s "$WORK/rttm/$name.$vname.rttm" "$CPU_RTTM/$name.rttm"; then
        same=$((same + 1)); verdict=", byte-identical to the CPU backend's"
      else
        verdict=", DIFFERS from the CPU backend's"
      fi
    fi
    echo "$name $vname rc=$rc $(grep -c . "$WORK/rttm/$name.$vname.rttm" 2>/dev/null) lines$verdict"
    tar -C "$WORK" -cf "$OUT/fixture_rttms.tar" rttm
  done
done
if (( compared > 0 )); then
  echo "fixture RTTMs: $same of $compared byte-identical to the CPU backend's ($CPU_RTTM)"
else
  echo "fixture RTTMs: no CPU references in $CPU_RTTM (bench/gpu/cpu_fixture_rttms.sh makes them); compare here"
fi
