# The staging every GPU payload script shares, sourced by tools/device/pack.sh,
# tests/attack_test_gpu_pack.sh and bench/{soak,service_overhead,qualify}/pack_gpu.sh.
# Each script names its targets, its data and its archive; this file builds,
# stages and packs them the same way for all of them:
#
#   source tools/device/pack_lib.sh
#   pack_init /tmp/bazel-cuda          # PACK_BAZEL honours OUTPUT_BASE; "" = the checkout's
#   pack_build //a:b //c:d             # unless SKIP_BUILD=1; build output to stderr
#   stage_binaries "$(pack_bazel_bin)" "$PACK_STAGE" //a:b //c:d
#   stage_plda "$PLDA" "$PACK_STAGE/plda"
#   make_tar "$PACK_STAGE" .device/x.tar.xz bin lib plda
#
# The GPU machine (Ubuntu 24.04, driver 580) has glibc, libstdc++, CUDA 13
# (cudart, cuBLAS) and cuDNN 9, but none of the Debian libraries the binaries
# link (Abseil, gRPC, oneDNN, OpenBLAS, FFTW, libsndfile, soxr, libzip, ...):
# those travel in the archive's lib/.

# pack_init DEFAULT_OUTPUT_BASE: PACK_BAZEL is the bazel command line for the
# output base OUTPUT_BASE (environment), else DEFAULT_OUTPUT_BASE, else (both
# empty) the checkout's own. PACK_STAGE is a fresh staging folder, removed
# when the script exits.
pack_init() {
  local output_base="${OUTPUT_BASE:-$1}"
  PACK_BAZEL=(bazel)
  [[ -n "$output_base" ]] && PACK_BAZEL+=(--output_base="$output_base")
  PACK_STAGE=$(mktemp -d)
  trap 'rm -rf "$PACK_STAGE"' EXIT
}

# pack_build TARGET...: builds the targets (its output to stderr, so that a
# script's stdout stays its summary), unless SKIP_BUILD=1.
pack_build() {
  [[ "${SKIP_BUILD:-0}" == 1 ]] && return 0
  "${PACK_BAZEL[@]}" build "$@" >&2
}

# pack_bazel_bin: the output base's bazel-bin (not the bazel-bin symlink:
# other output bases share the checkout).
pack_bazel_bin() {
  "${PACK_BAZEL[@]}" info bazel-bin 2>/dev/null
}

# stage_binaries BIN STAGE TARGET...: copies each Bazel target's binary from
# BIN (`bazel info bazel-bin`) to STAGE/bin, and every shared library they
# load that the GPU machine lacks to STAGE/lib: everything ldd resolves
# outside the base system (glibc, libstdc++) and the CUDA toolkit. Fails on a
# Bazel-internal shared library (the binary must be linked statically).
stage_binaries() {
  local bin="$1" stage="$2"
  shift 2
  mkdir -p "$stage/bin" "$stage/lib"
  local t pkg name
  for t in "$@"; do
    pkg=${t#//}; pkg=${pkg%%:*}; name=${t##*:}
    cp -L "$bin/$pkg/$name" "$stage/bin/$name"
  done
  local b
  for b in "$stage"/bin/*; do
    ldd "$b" | awk '/=> \// {print $3}'
  done | sort -u | while read -r lib; do
    base=$(basename "$lib")
    case "$base" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) continue ;;
      libcuda.so*|libcudart.so*|libcublas*|libcudnn*|libcufft*|libnvrtc*) continue ;;
    esac
    if [[ "$lib" == *_solib_* ]]; then
      echo "stage_binaries: $lib is a Bazel-internal shared library; link the binary statically" >&2
      exit 1
    fi
    cp -L "$lib" "$stage/lib/$base"
  done
}

# stage_plda PLDA_DIR DEST: the two PLDA files of a model directory
# (xvec_transform.npz, plda.npz) into DEST.
stage_plda() {
  mkdir -p "$2"
  cp "$1/xvec_transform.npz" "$1/plda.npz" "$2/"
}

# stage_data DATA DEST FILE...: golden files by their path under DATA
# (DIARIZATION_TEST_DATA), to the same relative paths under DEST.
stage_data() {
  local data="$1" dest="$2" f
  shift 2
  for f in "$@"; do
    mkdir -p "$dest/$(dirname "$f")"
    cp "$data/$f" "$dest/$f"
  done
}

# stage_service_audio DATA DEST: the recordings the service benchmarks
# stream, under the names their scripts use: DEST/sample.wav (pyannote's
# sample) and DEST/four_speaker.wav (the four-speaker fixture, which
# bench/service_overhead/grpc_streams.sh tiles to 10 minutes).
stage_service_audio() {
  mkdir -p "$2"
  cp "$1/pyannote-audio/sample/sample.wav" "$2/sample.wav"
  cp "$1/findit-dia-parity/05_four_speaker/clip_16k.wav" "$2/four_speaker.wav"
}

# make_tar STAGE ARCHIVE ENTRY...: STAGE's ENTRYs as one xz archive at
# ARCHIVE (replaced), and its size.
make_tar() {
  local stage="$1" archive="$2"
  shift 2
  mkdir -p "$(dirname "$archive")"
  rm -f "$archive"
  tar -C "$stage" -cf - "$@" | xz -T2 -6 >"$archive"
  ls -la "$archive"
}
