#!/usr/bin/env bash
# Fetches the header-only cuDNN frontend (NVIDIA's C++ wrapper of cuDNN's
# graph API) from its pinned PyPI wheel, checks the wheel's SHA-256 and
# unpacks its include/ into third_party/cudnn_frontend/include (ignored by
# git), where //third_party/cudnn_frontend finds it (ADR 0072). Idempotent:
# does nothing when that version is already unpacked.
#
# Pin: 1.18.0, the last release whose version guards stop at cuDNN 9.18
# (the toolkit here has cuDNN 9.19; newer frontends guard features of 9.20+
# and would work too, but were not needed). The wheel is CPython-specific
# only for its Python module; the headers are the same in every wheel.
#
# Usage: bash tools/third_party/get_cudnn_frontend.sh
# Env:   CACHE (download folder, default /tmp/diarization-wheels)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
version="1.18.0"
wheel="nvidia_cudnn_frontend-${version}-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
sha="382ea063b92cbfd5b442cb75ff8422932d78276aecf139e46713ed1ad3d07af4"
dest="${root}/third_party/cudnn_frontend/include"
stamp="${dest}/.wheel-sha256"
cache="${CACHE:-/tmp/diarization-wheels}"

if [[ -f "${stamp}" && "$(cat "${stamp}")" == "${sha}" ]]; then
  exit 0
fi

cudnn_h=/usr/local/cuda/include/cudnn_version.h
if [[ -f "${cudnn_h}" ]]; then
  major=$(awk '/#define CUDNN_MAJOR /{print $3}' "${cudnn_h}")
  if [[ "${major}" != 9 ]]; then
    echo "get_cudnn_frontend.sh: ${cudnn_h} says cuDNN ${major}; the pinned frontend ${version} was chosen for cuDNN 9" >&2
    exit 1
  fi
fi

mkdir -p "${cache}"
if [[ ! -f "${cache}/${wheel}" ]]; then
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux_2_28_x86_64 \
    "nvidia-cudnn-frontend==${version}" -d "${cache}"
fi
if ! echo "${sha}  ${cache}/${wheel}" | sha256sum -c --quiet; then
  echo "get_cudnn_frontend.sh: ${cache}/${wheel} does not have the pinned SHA-256; delete it and retry" >&2
  exit 1
fi

# Unpack into a temporary folder beside the destination, then swap it in,
# so an interrupted run never leaves half a header tree.
tmp="$(mktemp -d "${root}/third_party/cudnn_frontend/.unpack.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
/usr/bin/python3 - "${cache}/${wheel}" "${tmp}" <<'PY'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
n = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if not name.startswith("include/") or name.endswith("/"):
            continue
        # No absolute paths or parent references out of the folder.
        rel = os.path.normpath(name)
        if rel.startswith("..") or os.path.isabs(rel):
            sys.exit(f"unsafe member {name}")
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(z.read(info))
        n += 1
if n == 0 or not os.path.exists(os.path.join(out, "include", "cudnn_frontend.h")):
    sys.exit("the wheel has no include/cudnn_frontend.h")
print(f"get_cudnn_frontend.sh: {n} headers")
PY
echo "${sha}" >"${tmp}/include/.wheel-sha256"
rm -rf "${dest}"
mv "${tmp}/include" "${dest}"
echo "get_cudnn_frontend.sh: cuDNN frontend ${version} in ${dest}"
