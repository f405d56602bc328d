#!/usr/bin/env python3
"""Records pyannote.audio's WHOLE community-1 pipeline on a model directory.

pyannote's own `SpeakerDiarization` is built with community-1's configuration
(VBxClustering, exclude-overlap embeddings, batch 32, threshold 0.6, Fa 0.07,
Fb 0.8, min_duration_off 0.0; ../shared/specs/pipeline.md §0) around
pyannote's PyanNet and WeSpeakerResNet34 holding the directory's weights and
the directory's PLDA, and run on the findit fixture clips. The service must
give the same RTTM with the same model directory (parity chain link 3).

    .venv-reference/bin/python tools/reference/record_pipeline.py \
        --models DIR --out engine/models/testdata/pipeline_<name>

Writes, per clip `<clip>` (e.g. 02_pyannote_sample):
    <clip>.rttm            speaker_diarization (pyannote's write_rttm, uri <clip>)
    <clip>.exclusive.rttm  exclusive_speaker_diarization
    arrays.safetensors     <clip>.segmentations U8 (chunks, 589, 3) binarized,
                           <clip>.embeddings F32 (chunks, 3, 256) as the hook
                           gets them (NaN for skipped speakers, as pyannote)
    info.json              versions, model hashes, clip hashes, configuration
"""

import argparse
import hashlib
import json
import os
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402
import torch  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pyannote_models  # noqa: E402

CLIPS = ["02_pyannote_sample", "03_dual_speaker", "04_three_speaker", "05_four_speaker"]
CONFIG = dict(clustering="VBxClustering", embedding_exclude_overlap=True,
              segmentation_batch_size=32, embedding_batch_size=32)
PARAMS = {"segmentation": {"min_duration_off": 0.0},
          "clustering": {"threshold": 0.6, "Fa": 0.07, "Fb": 0.8}}


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
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    from pyannote.audio.core.plda import PLDA
    from pyannote.audio.pipelines import SpeakerDiarization

    seg = pyannote_models.build_pyannet()
    seg.load_state_dict(load_file(str(args.models / "segmentation.safetensors")), strict=True)
    emb = pyannote_models.build_resnet34()
    emb.load_state_dict(load_file(str(args.models / "embedding.safetensors")), strict=True)
    plda = PLDA.from_pretrained(str(args.models / "plda"))

    pipeline = SpeakerDiarization(segmentation=seg, embedding=emb, plda=plda, **CONFIG)
    pipeline.instantiate(PARAMS)

    args.out.mkdir(parents=True, exist_ok=True)
    arrays, clips = {}, []
    for clip in args.clips:
        wav = args.data / "findit-dia-parity" / clip / "clip_16k.wav"
        audio, sr = sf.read(str(wav), dtype="float32", always_2d=True)
        assert sr == 16000
        captured = {}

        def hook(step, artifact, file=None, total=None, completed=None):
            if step in ("segmentation", "embeddings") and completed is None and \
                    artifact is not None:
                captured[step] = artifact

        waveform = torch.from_numpy(audio.T.copy())
        with torch.inference_mode():
            out = pipeline({"waveform": waveform, "sample_rate": 16000, "uri": clip}, hook=hook)
        with open(args.out / f"{clip}.rttm", "w") as f:
            out.speaker_diarization.write_rttm(f)
        with open(args.out / f"{clip}.exclusive.rttm", "w") as f:
            out.exclusive_speaker_diarization.write_rttm(f)
        segmentations = captured["segmentation"].data
        arrays[f"{clip}.segmentations"] = segmentations.astype(np.uint8)
        assert np.array_equal(arrays[f"{clip}.segmentations"], segmentations)
        arrays[f"{clip}.embeddings"] = np.asarray(captured["embeddings"], np.float32)
        clips.append({"clip": clip, "audio": str(wav.relative_to(args.data)),
                      "audio_sha256": hashlib.sha256(wav.read_bytes()).hexdigest(),
                      "chunks": int(segmentations.shape[0]),
                      "speakers": len(out.speaker_diarization.labels()),
                      "rttm_lines": sum(1 for _ in out.speaker_diarization.itertracks())})
        print(clip, clips[-1])
    save_file(arrays, str(args.out / "arrays.safetensors"))

    import pyannote.audio
    manifest = json.loads((args.models / "manifest.json").read_text())
    info = {
        "generator": "tools/reference/record_pipeline.py",
        "pyannote_audio": pyannote.audio.__version__, "torch": torch.__version__,
        "numpy": np.__version__,
        "pipeline": {**CONFIG, "segmentation_step": pipeline.segmentation_step,
                     "params": PARAMS},
        "models": {role: {"sha256": manifest[role]["files"][0]["sha256"]
                          if role != "plda" else [f["sha256"] for f in manifest[role]["files"]],
                          "random_weights": manifest[role]["random_weights"],
                          "source": manifest[role]["source"]}
                   for role in ("segmentation", "embedding", "plda")},
        "clips": clips,
    }
    (args.out / "info.json").write_text(json.dumps(info, indent=2) + "\n")


if __name__ == "__main__":
    main()
