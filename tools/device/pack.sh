#!/usr/bin/env bash
# The one payload script of the GPU harness: builds the kits asked for
# (tools/device/kits.sh), stages their binaries, the shared libraries the GPU
# machine lacks, their golden data and extras, and always writes one archive,
# .device/payload.tar.xz (ignored by git), which bench/gpu/round.sh unpacks
# once on the GPU machine:
#
#   here:  REAL_MODELS_DIR=DIR KITS="tests bench server" tools/device/pack.sh
#   run:   carry [".device/payload.tar.xz"], command
#          "PARTS='tests fixtures rtfx' bash bench/gpu/round.sh"
#
# KITS (default: every GPU kit) picks the kits; the device tool carries
# 64 MiB, so a round with the pyannote wheels (KITS="bench ratio",
# tools/device/fetch_wheels.sh first) packs fewer kits.
# Builds with --output_base=/tmp/bazel-cuda (OUTPUT_BASE overrides; empty:
# the checkout's own); SKIP_BUILD=1 stages what is built. The GPU machine
# (Ubuntu 24.04, driver 580) has glibc, libstdc++, CUDA 13 and cuDNN 9 but
# none of the Debian libraries the binaries link (Abseil, gRPC, oneDNN,
# OpenBLAS, FFTW, libsndfile, ...): those travel in lib/.
# The archive: bin/ lib/ data/ plda/ real/ [wheels/] kits commit dirty.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
source tools/device/kits.sh
KITS=${KITS:-$KITS_ALL}
DATA=${DIARIZATION_TEST_DATA:-$ROOT/../shared/data}
PLDA=${PLDA_DIR:-$ROOT/../shared/models/community-1-plda}
REAL_MODELS_DIR=${REAL_MODELS_DIR:-}
ARCHIVE=${ARCHIVE:-.device/payload.tar.xz}
OUTPUT_BASE=${OUTPUT_BASE-/tmp/bazel-cuda}
BAZEL=(bazel)
[[ -n "$OUTPUT_BASE" ]] && BAZEL+=(--output_base="$OUTPUT_BASE")
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT

targets=() files=() extras=()
for k in $KITS; do
  [[ -n "${KIT_TARGETS[$k]+x}" ]] || { echo "pack.sh: no kit '$k' (kits.sh)" >&2; exit 2; }
  read -r -a t <<<"$(echo ${KIT_TARGETS[$k]})"; targets+=(${t[@]+"${t[@]}"})
  read -r -a f <<<"${KIT_DATA[$k]}"; files+=(${f[@]+"${f[@]}"})
  read -r -a e <<<"${KIT_EXTRAS[$k]}"; extras+=(${e[@]+"${e[@]}"})
done
mapfile -t targets < <(printf '%s\n' "${targets[@]}" | sort -u)

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  bash tools/third_party/get_cudnn_frontend.sh >&2  # ADR 0072
  # Tests are built by `bazel test --build_tests_only=false` (a plain build
  # skips the gpu-tagged ones); their run fails here (no GPU), which is fine.
  "${BAZEL[@]}" test --build_tests_only=false "${targets[@]}" >/dev/null 2>&1 ||
    "${BAZEL[@]}" build "${targets[@]}" >&2
fi
BIN=$("${BAZEL[@]}" info bazel-bin 2>/dev/null)

# Binaries, and every shared library they load outside the base system and
# the CUDA toolkit; a Bazel-internal one means a binary is not static.
mkdir -p "$STAGE/bin" "$STAGE/lib"
for t in "${targets[@]}"; do
  pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
  cp -L "$BIN/$pkg/$name" "$STAGE/bin/$name"
done
for b in "$STAGE"/bin/*; do ldd "$b" | awk '/=> \// {print $3}'; done | sort -u |
  while read -r lib; do
    base=$(basename "$lib")
    case "$base" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) continue ;;
      libcuda.so*|libcudart.so*|libcublas*|libcudnn*|libcufft*|libnvrtc*) continue ;;
    esac
    [[ "$lib" == *_solib_* ]] && { echo "pack.sh: $lib is Bazel-internal; link statically" >&2; exit 1; }
    cp -L "$lib" "$STAGE/lib/$base"
  done

# Golden data at their paths under DIARIZATION_TEST_DATA.
mkdir -p "$STAGE/data"
for f in $(printf '%s\n' ${files[@]+"${files[@]}"} | sort -u); do
  mkdir -p "$STAGE/data/$(dirname "$f")"
  cp "$DATA/$f" "$STAGE/data/$f"
done
entries=(bin lib data kits commit dirty)
for e in $(printf '%s\n' ${extras[@]+"${extras[@]}"} | sort -u); do
  case $e in
    plda) mkdir -p "$STAGE/plda"; cp "$PLDA/xvec_transform.npz" "$PLDA/plda.npz" "$STAGE/plda/"; entries+=(plda) ;;
    real)
      mkdir -p "$STAGE/real"; entries+=(real)
      if [[ -n "$REAL_MODELS_DIR" ]]; then
        cp "$REAL_MODELS_DIR/segmentation.safetensors" "$STAGE/real/"
      else
        echo "pack.sh: REAL_MODELS_DIR not set; parts needing the real segmentation weights will fail" >&2
      fi ;;
    service_audio)
      cp "$DATA/pyannote-audio/sample/sample.wav" "$STAGE/data/sample.wav"
      cp "$DATA/findit-dia-parity/05_four_speaker/clip_16k.wav" "$STAGE/data/four_speaker.wav" ;;
    wheels) mkdir -p "$STAGE/wheels"; cp .whl/*.whl "$STAGE/wheels/"; entries+=(wheels) ;;
    *) echo "pack.sh: unknown extra '$e'" >&2; exit 2 ;;
  esac
done
echo "$KITS" >"$STAGE/kits"
git rev-parse HEAD >"$STAGE/commit" 2>/dev/null || echo unknown >"$STAGE/commit"
git status --porcelain >"$STAGE/dirty" 2>/dev/null || true

mkdir -p "$(dirname "$ARCHIVE")"
rm -f "$ARCHIVE"
tar -C "$STAGE" -cf - "${entries[@]}" | xz -T2 -6 >"$ARCHIVE"
echo "pack.sh: kits [$KITS]: $(ls "$STAGE/bin" | wc -l) binaries, $(ls "$STAGE/lib" | wc -l) libraries, $(find "$STAGE/data" -type f | wc -l) data files -> $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1))"
