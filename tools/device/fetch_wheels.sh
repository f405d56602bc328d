#!/usr/bin/env bash
# Downloads into .whl/ (ignored by git) the wheels pyannote.audio 4.0.4 needs
# on the GPU machine (Python 3.12) beyond what its image already holds (torch,
# torchaudio, numpy, scipy, scikit-learn, pandas, lightning, matplotlib,
# protobuf, requests, pyyaml, ...: /work/.library/device/KINDS.md), for
# the ratio part (bench/gpu/parts/ratio.sh; kit "ratio" of
# tools/device/kits.sh packs them). Versions are those of
# tools/reference/requirements.lock (our reference venv), one of each.
#
# Left out on purpose: torchcodec (pyannote's io.py catches its import error;
# we hand the pipeline in-memory waveforms), soundfile (the baseline reads
# wavs with the standard library), the gRPC OTLP exporter (pyannote imports
# only the HTTP one) and pyannoteai-sdk (imported only by the pyannoteAI
# pipelines). protobuf is the reference venv's (opentelemetry-proto and
# googleapis-common-protos need a recent runtime; the image's is unknown, and
# PYTHONPATH puts ours first). bench/gpu/pyannote_baseline.py --check_imports lists what a
# pipeline build imports.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >>.git/info/exclude
PY=${PYTHON:-python3}
WHEELS=(
  pyannote.audio==4.0.4
  pyannote.core==6.1.0
  pyannote.database==6.1.1
  pyannote.metrics==4.2.0
  pyannote.pipeline==4.1.0
  asteroid-filterbanks==0.4.0
  pytorch-metric-learning==2.9.0
  torch-audiomentations==0.12.0
  torch-pitch-shift==1.2.5
  julius==0.2.8
  primePy==1.3
  optuna==5.0.0
  alembic==1.20.1
  SQLAlchemy==2.1.9
  greenlet
  colorlog==6.12.0
  Mako==1.4.3
  opentelemetry-api==1.45.2
  opentelemetry-sdk==1.45.2
  opentelemetry-semantic-conventions==0.66b2
  opentelemetry-exporter-otlp-proto-http==1.45.2
  opentelemetry-exporter-otlp-proto-common==1.45.2
  opentelemetry-proto==1.45.2
  googleapis-common-protos==1.76.0
  opentelemetry-exporter-otlp-common==0.66b2
  opentelemetry-exporter-http-transport==0.66b2
  protobuf==7.36.2
)
rm -rf .whl && mkdir -p .whl
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d .whl "${WHEELS[@]}"
ls -la .whl
du -sh .whl
