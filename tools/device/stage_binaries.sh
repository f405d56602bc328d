# Sourced by the GPU pack scripts (tools/device/pack.sh,
# bench/service_overhead/pack_gpu.sh).
#
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
