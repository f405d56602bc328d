#!/usr/bin/env python3
"""Records pyannote.audio's whole pipeline on fixture audio at other rates.

pyannote resamples the whole recording for segmentation and each embedding
window's crop separately from the original-rate audio (torchaudio's kernel;
pyannote/audio/core/io.py). The service must give the same RTTM for the same
file (issue 41). For each clip, rate and layout this makes the file with sox
exactly as //tools/diarize:rates_parity_test does:

    mono:    sox -D clip_16k.wav -r RATE -b 16 -e signed-integer out.wav
    stereo:  sox clip_16k.wav rev.wav reverse
             sox -D -M clip_16k.wav rev.wav -r RATE -b 16 -e signed-integer out.wav

(the stereo file's right channel is the clip backwards, so the down-mix is a
different signal from either channel), reads it with soundfile as float32 and
hands pyannote the waveform at its own rate, with the community-1
configuration of record_pipeline.py and numpy's argsort made stable (as the
service ranks speakers; record_pipeline.py --stable-argsort says why).

    .venv-reference/bin/python tools/reference/record_rates.py \
        --models DIR --out testing/testdata/pipeline_rates

Writes <clip>.<layout><rate>.rttm and .exclusive.rttm (no hint) and
<clip>.<layout><rate>.<hint>.rttm for each --hints entry (networks computed
once per file), and info.json with the SHA-256 of every file sox made (the
test checks them, so a different sox fails loudly instead of comparing
different audio).
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_pipeline import (build_pipeline, hint_suffix,  # noqa: E402
                             make_argsort_stable, memoise_networks)

CLIPS = ["02_pyannote_sample", "03_dual_speaker", "04_three_speaker", "05_four_speaker"]
RATES = [8000, 22050, 44100, 48000]
HINTS = ["num_speakers=2", "max_speakers=1", "min_speakers=3"]


def make(src: Path, rate: int, layout: str, work: Path) -> Path:
    out = work / f"{layout}{rate}.wav"
    if layout == "mono":
        subprocess.run(["sox", "-D", str(src), "-r", str(rate), "-b", "16",
                        "-e", "signed-integer", str(out)], check=True)
    else:
        rev = work / "rev.wav"
        subprocess.run(["sox", str(src), str(rev), "reverse"], check=True)
        subprocess.run(["sox", "-D", "-M", str(src), str(rev), "-r", str(rate), "-b", "16",
                        "-e", "signed-integer", str(out)], check=True)
    return out


def main() -> None:
    root = Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--data", type=Path,
                        default=Path(os.environ.get("DIARIZATION_TEST_DATA") or
                                     root.parent / "shared" / "data"))
    parser.add_argument("--clips", nargs="*", default=CLIPS)
    parser.add_argument("--rates", nargs="*", type=int, default=RATES)
    parser.add_argument("--layouts", nargs="*", default=["mono", "stereo"])
    parser.add_argument("--hints", nargs="*", default=HINTS)
    args = parser.parse_args()

    make_argsort_stable()
    pipeline = build_pipeline(args.models)
    memoise_networks(pipeline)  # networks once per file

    args.out.mkdir(parents=True, exist_ok=True)
    files = []
    sox = subprocess.run(["sox", "--version"], capture_output=True, text=True).stdout.strip()
    for clip in args.clips:
        src = args.data / "findit-dia-parity" / clip / "clip_16k.wav"
        for layout in args.layouts:
            for rate in args.rates:
                with tempfile.TemporaryDirectory() as work:
                    wav = make(src, rate, layout, Path(work))
                    digest = hashlib.sha256(wav.read_bytes()).hexdigest()
                    audio, sr = sf.read(str(wav), dtype="float32", always_2d=True)
                assert sr == rate
                name = f"{clip}.{layout}{rate}"
                waveform = torch.from_numpy(audio.T.copy())
                file = {"waveform": waveform, "sample_rate": rate, "uri": name}
                with torch.inference_mode():
                    out = pipeline(dict(file))
                with open(args.out / f"{name}.rttm", "w") as f:
                    out.speaker_diarization.write_rttm(f)
                with open(args.out / f"{name}.exclusive.rttm", "w") as f:
                    out.exclusive_speaker_diarization.write_rttm(f)
                speakers = {"none": len(out.speaker_diarization.labels())}
                for hint in args.hints:
                    key, value, suffix = hint_suffix(hint)
                    with torch.inference_mode():
                        hinted = pipeline(dict(file), **{key: value})
                    with open(args.out / f"{name}.{suffix}.rttm", "w") as f:
                        hinted.speaker_diarization.write_rttm(f)
                    speakers[suffix] = len(hinted.speaker_diarization.labels())
                files.append({"clip": clip, "layout": layout, "rate": rate,
                              "audio_sha256": digest, "frames": int(audio.shape[0]),
                              "speakers": speakers})
                print(name, speakers, flush=True)

    import pyannote.audio
    info = {"generator": "tools/reference/record_rates.py",
            "pyannote_audio": pyannote.audio.__version__, "torch": torch.__version__,
            "numpy": np.__version__, "sox": sox, "stable_argsort": True,
            "hints": args.hints, "files": files}
    (args.out / "info.json").write_text(json.dumps(info, indent=1) + "\n")


if __name__ == "__main__":
    main()
