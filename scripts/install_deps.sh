#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the demo need.
# Idempotent: a package already installed is skipped by apt, and apt-get update
# runs only when something is missing.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap bazel-rules-java
  build-essential
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc grpc-proto
  libprotobuf-dev protobuf-compiler
  libabsl-dev
  prometheus-cpp-dev libmicrohttpd-dev
  libgtest-dev libgmock-dev
  libsndfile1-dev libvorbis-dev libogg-dev libmpg123-dev libeigen3-dev nlohmann-json3-dev libzip-dev libssl-dev
  libhdf5-dev
  libdnnl-dev libopenblas-dev libfftw3-dev
  espeak-ng sox lame
  python3-grpcio python3-numpy python3-yaml
  golang-go golang-google-grpc-dev golang-google-protobuf-dev golang-goprotobuf-dev
  prometheus
  clang-14 libclang-rt-14-dev
  curl ca-certificates
  openssl
  haproxy
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}" >&2
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get -o DPkg::Lock::Timeout=300 update -q
  $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"
fi
