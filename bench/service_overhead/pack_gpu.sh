#!/usr/bin/env bash
# Packs what the service-overhead benchmark needs on the GPU machine into
# .device/service-overhead.tar.xz (ignored by git): engine_direct_cuda,
# diarization_server_cuda, diarize_client, make_random_models, the shared
# libraries that machine lacks (see tools/device/pack.sh), the PLDA and a few
# golden recordings. On the device tool:
#
#   carry [".device/service-overhead.tar.xz"],
#   command "bash bench/service_overhead/gpu_run.sh"
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
OUTPUT_BASE=${OUTPUT_BASE:-/tmp/bazel-runtime}
DATA=${DIARIZATION_TEST_DATA:-$ROOT/../shared/data}
PLDA=${PLDA_DIR:-$ROOT/../shared/models/community-1-plda}
TARGETS=(
  //bench/service_overhead:engine_direct_cuda
  //server:diarization_server_cuda
  //clients:diarize_client
  //tools/make_random_models:make_random_models
)
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  bazel --output_base="$OUTPUT_BASE" build "${TARGETS[@]}" >&2
fi
BIN=$(bazel --output_base="$OUTPUT_BASE" info bazel-bin 2>/dev/null)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/data" "$STAGE/plda"
for t in "${TARGETS[@]}"; do
  pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
  cp -L "$BIN/$pkg/$name" "$STAGE/bin/$name"
done
for b in "$STAGE"/bin/*; do
  ldd "$b" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  base=$(basename "$lib")
  case "$base" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) continue ;;
    libcuda.so*|libcudart.so*|libcublas*|libcudnn*|libcufft*|libnvrtc*) continue ;;
  esac
  if [[ "$lib" == *_solib_* ]]; then
    echo "pack_gpu.sh: $lib is a Bazel-internal shared library" >&2
    exit 1
  fi
  cp -L "$lib" "$STAGE/lib/$base"
done
cp "$DATA/pyannote-audio/sample/sample.wav" "$STAGE/data/sample.wav"
cp "$DATA/findit-dia-parity/05_four_speaker/clip_16k.wav" "$STAGE/data/four_speaker.wav"
cp "$PLDA/xvec_transform.npz" "$PLDA/plda.npz" "$STAGE/plda/"
mkdir -p .device
rm -f .device/service-overhead.tar.xz
tar -C "$STAGE" -cf - bin lib data plda | xz -T2 -6 >.device/service-overhead.tar.xz
ls -la .device/service-overhead.tar.xz
