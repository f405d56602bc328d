#!/usr/bin/env bash
# Rewrites .device/round.tar.xz (tools/device/pack_round.sh) with only the
# binaries that bench/gpu/session_round.sh's parts ratio, live, server,
# server_ab, rtfx and rtfx_ab run (the server, its client, make_random_models
# and rtfx_main; the libraries, data and weights stay): about 39 MiB instead
# of 50, so that it travels with the pyannote wheels (.whl, ~8 MiB) under
# the device tool's 64 MiB carry, which the full archive does not (seen
# 2026-12-04). The full archive is kept at $FULL (default
# /tmp/round_full.tar.xz), outside the carried folder. KEEP_EXTRA (names,
# space-separated) keeps more binaries, e.g. "cuda_linkage_test" for
# bench/gpu/linkage_sanitizers.sh in the same call.
#
#   here:  tools/device/pack_round.sh; tools/device/slim_round.sh
#   run:   carry [".device", ".whl"], command
#          "PARTS='ratio live server' bash bench/gpu/session_round.sh"
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
FULL=${FULL:-/tmp/round_full.tar.xz}
KEEP=(diarization_server_cuda diarize_client make_random_models rtfx_main ${KEEP_EXTRA:-})
[[ -f .device/round.tar.xz ]] || { echo "slim_round.sh: no .device/round.tar.xz (tools/device/pack_round.sh)"; exit 2; }
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
tar -C "$STAGE" -xJf .device/round.tar.xz
for b in "${KEEP[@]}"; do
  [[ -x "$STAGE/bin/$b" ]] || { echo "slim_round.sh: the archive has no bin/$b"; exit 2; }
done
for f in "$STAGE"/bin/*; do
  keep=0
  for b in "${KEEP[@]}"; do [[ $(basename "$f") == "$b" ]] && keep=1; done
  [[ $keep == 1 ]] || rm -f "$f"
done
mv .device/round.tar.xz "$FULL"
source tools/device/pack_lib.sh
make_tar "$STAGE" "$ROOT/.device/round.tar.xz" bin lib data plda real commit dirty
echo "slim_round.sh: $(ls "$STAGE/bin" | tr '\n' ' ')(commit $(cat "$STAGE/commit")); the full archive is $FULL"
