#!/usr/bin/env bash
# Creates the reference virtual environment (pyannote.audio and its
# dependencies from PyPI, pinned) used by tools/reference/record.py and
# tools/convert/convert.py. Never used by the service or by CI's C++ tests.
#
# Usage: bash tools/reference/setup.sh [VENV_DIR]   (default: <repo>/.venv-reference)
# Needs Python 3.11 (python3 on PATH, or $PYTHON) and about 8 GB of disk:
# torch from PyPI brings its CUDA libraries. pyannote warns at import that
# torchcodec cannot find FFmpeg's shared libraries: harmless here, the tools
# read audio with soundfile and hand pyannote waveforms in memory.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
venv="${1:-${root}/.venv-reference}"
python="${PYTHON:-python3}"

"${python}" - <<'PY'
import sys
if sys.version_info[:2] != (3, 11):
    sys.exit(f"tools/reference/setup.sh: need Python 3.11 (the lock file is for it), got {sys.version.split()[0]}; set $PYTHON")
PY

if [[ ! -x "${venv}/bin/python" ]]; then
  "${python}" -m venv "${venv}"
fi
"${venv}/bin/python" -m pip install --quiet --upgrade "pip==24.3.1"
# requirements.lock pins every package (made with `pip freeze` after
# installing requirements.in); --no-deps would be stricter but pip's resolver
# then checks nothing, so the lock is installed with dependency checks on.
"${venv}/bin/python" -m pip install --quiet -r "${here}/requirements.lock"
"${venv}/bin/python" -c "import pyannote.audio, torch; print('pyannote.audio', pyannote.audio.__version__, 'torch', torch.__version__)"
echo "reference venv ready: ${venv}"
