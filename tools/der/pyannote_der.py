"""DER of RTTM files with pyannote.metrics, the reference for //tools:der.

    .venv/bin/python tools/der/pyannote_der.py --reference REF.rttm \
        --hypothesis HYP.rttm [--collar S] [--skip-overlap] [--uem FILE.uem]

Prints one JSON object: per-file and total components (seconds) and DER, in
the same layout as `der --format=json`. Files are the union of both sides'
uris; a side without a uri is an empty annotation. Needs the venv of
tools/venv.sh.
"""

import argparse
import json
import sys
import warnings

from pyannote.core import Annotation
from pyannote.database.util import load_rttm, load_uem
from pyannote.metrics.diarization import DiarizationErrorRate

COMPONENTS = {
    "total": "total",
    "correct": "correct",
    "missed": "missed detection",
    "false_alarm": "false alarm",
    "confusion": "confusion",
}


def score(reference_path, hypothesis_path, collar=0.0, skip_overlap=False,
          uem_path=None):
    references = load_rttm(reference_path)
    hypotheses = load_rttm(hypothesis_path)
    uems = load_uem(uem_path) if uem_path else {}
    metric = DiarizationErrorRate(collar=collar, skip_overlap=skip_overlap)
    files = []
    for uri in sorted(set(references) | set(hypotheses)):
        reference = references.get(uri, Annotation(uri=uri))
        hypothesis = hypotheses.get(uri, Annotation(uri=uri))
        with warnings.catch_warnings():
            # "'uem' was approximated by the union of ..." (the default).
            warnings.simplefilter("ignore")
            detail = metric(reference, hypothesis, uem=uems.get(uri),
                            detailed=True)
        entry = {key: float(detail[name]) for key, name in COMPONENTS.items()}
        entry["der"] = float(detail["diarization error rate"])
        entry["uri"] = uri
        files.append(entry)
    total = {key: float(metric[name]) for key, name in COMPONENTS.items()}
    total["der"] = float(abs(metric))
    return {"files": files, "total": total}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", required=True)
    parser.add_argument("--hypothesis", required=True)
    parser.add_argument("--collar", type=float, default=0.0)
    parser.add_argument("--skip-overlap", action="store_true")
    parser.add_argument("--uem", default=None)
    args = parser.parse_args()
    result = score(args.reference, args.hypothesis, args.collar,
                   args.skip_overlap, args.uem)
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
