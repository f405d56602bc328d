#!/usr/bin/env python3
"""Records torchaudio's resampler, as pyannote.audio 4.0 calls it, on noise.

pyannote resamples with torchaudio.functional.resample(waveform, rate, 16000)
at its defaults (pyannote/audio/core/io.py). The service computes the same
kernel itself (engine/audio/resampler.h); //engine/audio:resampler_test holds
it against these outputs.

    .venv-reference/bin/python tools/reference/record_resample.py \
        --out testing/testdata/resample_torchaudio

The input is the same pseudo-random noise in both places (no need to store
it): x[i] = (s_i >> 40) / 2^23 - 1 as float32, where s_0 = rate and
s_{i+1} = s_i * 6364136223846793005 + 1442695040888963407 mod 2^64 (Knuth's
MMIX LCG), so every value is exact in float32. Each rate gets
rate / 2 + 37 input samples (an odd count, to check the output length) and
writes <rate>.f32: torchaudio's output, float32 little-endian.

Crops, as pyannote's embedding windows are made (Audio.crop: the samples
[round(start·rate), round(end·rate)) of the original, zero-padded past the
end, resampled alone): 1 s crops starting at 0, 1, 2 and 3 s of 3.4 s of the
same noise (the last runs past the end). Only where a crop can differ from
the resampled recording is written, to <rate>.crops.f32: for each crop its
first and last 64 outputs and, when it runs past the end, the 64 outputs
from the recording's end on (info.json says where each piece is).
info.json holds the versions and each file's SHA-256.
"""

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np
import torch
import torchaudio

RATES = [8000, 11025, 22050, 24000, 32000, 44100, 48000, 96000, 44099]
CROP_RATES = [8000, 22050, 44100, 48000, 44099]
EDGE = 64
MULTIPLIER = 6364136223846793005
INCREMENT = 1442695040888963407
MASK = (1 << 64) - 1


def noise(rate: int, count: int) -> np.ndarray:
    state = rate
    values = np.empty(count, dtype=np.float32)
    for i in range(count):
        values[i] = np.float32((state >> 40) / float(1 << 23) - 1.0)
        state = (state * MULTIPLIER + INCREMENT) & MASK
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    info = {"torch": torch.__version__, "torchaudio": torchaudio.__version__,
            "call": "torchaudio.functional.resample(x[None], rate, 16000)",
            "inputs": "rate / 2 + 37 samples of the LCG noise in this script's docstring",
            "files": {}}
    for rate in RATES:
        x = noise(rate, rate // 2 + 37)
        y = torchaudio.functional.resample(torch.from_numpy(x)[None], rate, 16000)[0]
        data = y.numpy().astype("<f4").tobytes()
        (args.out / f"{rate}.f32").write_bytes(data)
        info["files"][f"{rate}.f32"] = {
            "rate": rate, "inputs": len(x), "outputs": int(y.shape[0]),
            "sha256": hashlib.sha256(data).hexdigest()}
        print(rate, len(x), y.shape[0])
    for rate in CROP_RATES:
        x = torch.from_numpy(noise(rate, rate * 34 // 10))
        whole_count = int(torchaudio.functional.resample(x[None], rate, 16000).shape[1])
        pieces, values = [], []
        for start in range(4):
            s0, s1 = round(start * rate), round((start + 1) * rate)
            crop = torch.nn.functional.pad(x[s0:min(s1, len(x))], (0, max(0, s1 - len(x))))
            y = torchaudio.functional.resample(crop[None], rate, 16000)[0]
            assert y.shape[0] == 16000
            spans = [(0, EDGE), (16000 - EDGE, EDGE)]
            if (start + 1) * 16000 > whole_count:
                spans.append((whole_count - start * 16000, EDGE))
            for offset, count in spans:
                pieces.append({"crop_start_s": start, "offset": offset, "count": count})
                values.append(y[offset:offset + count].numpy())
        data = np.concatenate(values).astype("<f4").tobytes()
        (args.out / f"{rate}.crops.f32").write_bytes(data)
        info["files"][f"{rate}.crops.f32"] = {
            "rate": rate, "inputs": len(x), "recording_outputs": whole_count,
            "pieces": pieces, "sha256": hashlib.sha256(data).hexdigest()}
        print(rate, "crops", len(pieces))
    (args.out / "info.json").write_text(json.dumps(info, indent=1) + "\n")


if __name__ == "__main__":
    main()
