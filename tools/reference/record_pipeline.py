#!/usr/bin/env python3
"""Records pyannote.audio's WHOLE community-1 pipeline on a model directory.

pyannote's own `SpeakerDiarization` is built with community-1's configuration
(VBxClustering, exclude-overlap embeddings, batch 32, threshold 0.6, Fa 0.07,
Fb 0.8, min_duration_off 0.0; ../shared/specs/pipeline.md §0) around
pyannote's PyanNet and WeSpeakerResNet34 holding the directory's weights and
the directory's PLDA, and run on the findit fixture clips. The service must
give the same RTTM with the same model directory (parity chain link 3).

    .venv-reference/bin/python tools/reference/record_pipeline.py \
        --models DIR --out testing/testdata/pipeline_<name>

Writes, per clip `<clip>` (e.g. 02_pyannote_sample):
    <clip>.rttm            speaker_diarization (pyannote's write_rttm, uri <clip>)
    <clip>.exclusive.rttm  exclusive_speaker_diarization
    arrays.safetensors     <clip>.segmentations U8 (windows, 589, 3) binarized,
                           <clip>.embeddings F32 (windows, 3, 256) as the hook
                           gets them (NaN for skipped speakers, as pyannote)
    info.json              versions, model hashes, clip hashes, configuration

With --hints (e.g. `--hints num_speakers=1 min_speakers=3 max_speakers=1`)
it records instead, per clip and hint, only the RTTMs of pyannote's pipeline
called with that hint: <clip>.<hint>.rttm and <clip>.<hint>.exclusive.rttm
(hint written `num2`, `min3`, `max1`), plus hints.json; arrays.safetensors
and info.json are left as they are. With --stable-argsort as well, numpy's
argsort is made stable for the run and the files are named
<clip>.<hint>.stable_argsort[.exclusive].rttm: pyannote's to_diarization
ranks speakers with np.argsort, whose default on x86 with AVX-512 (numpy
2.x dispatches it to x86-simd-sort, as in the reference venv here) does not
keep equal activations in index order; the service keeps the lower index
first, as a stable sort does.
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


def make_argsort_stable() -> None:
    """np.argsort(kind='stable') for the rest of the run: the service keeps
    equal activations in index order (the module docstring says why)."""
    argsort = np.argsort
    np.argsort = lambda a, axis=-1, kind=None, order=None, **kw: argsort(
        a, axis=axis, kind="stable", order=order, **kw)


def memoise_networks(pipeline) -> None:
    """get_segmentations and get_embeddings computed once per file uri
    (copies handed out): speaker-count hints change only the clustering."""
    import copy
    import functools
    for name in ("get_segmentations", "get_embeddings"):
        original = getattr(pipeline, name)
        cache = {}

        def memoised(file, *rest, _original=original, _cache=cache, **kwargs):
            key = file["uri"]
            if key not in _cache:
                _cache[key] = _original(file, *rest, **kwargs)
            return copy.deepcopy(_cache[key])
        setattr(pipeline, name, functools.wraps(original)(memoised))


def build_pipeline(models: Path):
    """pyannote's SpeakerDiarization with community-1's configuration around
    pyannote's modules holding the model directory's weights and PLDA
    (deterministic torch); record_rates.py builds its pipeline here too."""
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    from pyannote.audio.core.plda import PLDA
    from pyannote.audio.pipelines import SpeakerDiarization

    seg = pyannote_models.build_pyannet()
    seg.load_state_dict(load_file(str(models / "segmentation.safetensors")), strict=True)
    emb = pyannote_models.build_resnet34()
    emb.load_state_dict(load_file(str(models / "embedding.safetensors")), strict=True)
    plda = PLDA.from_pretrained(str(models / "plda"))
    pipeline = SpeakerDiarization(segmentation=seg, embedding=emb, plda=plda, **CONFIG)
    pipeline.instantiate(PARAMS)
    return pipeline


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
    parser.add_argument("--hints", nargs="*", default=None,
                        help="num_speakers=N, min_speakers=N or max_speakers=N")
    parser.add_argument("--stable-argsort", dest="stable_argsort", action="store_true",
                        help="with --hints: np.argsort(kind='stable') for the run")
    args = parser.parse_args()
    if args.stable_argsort:
        if args.hints is None:
            sys.exit("--stable-argsort goes with --hints")
        make_argsort_stable()

    pipeline = build_pipeline(args.models)

    args.out.mkdir(parents=True, exist_ok=True)
    if args.hints is not None:
        record_hints(pipeline, args)
        return
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


HINT_NAMES = {"num_speakers": "num", "min_speakers": "min", "max_speakers": "max"}


def hint_suffix(hint: str):
    """`num_speakers=2` -> ("num_speakers", 2, "num2")."""
    key, _, value = hint.partition("=")
    if key not in HINT_NAMES or not value.isdigit() or int(value) < 1:
        sys.exit(f"bad hint {hint!r}: want num_speakers=N, min_speakers=N or max_speakers=N")
    return key, int(value), f"{HINT_NAMES[key]}{int(value)}"


def record_hints(pipeline, args) -> None:
    """Runs pyannote's pipeline once per clip and hint; the networks' outputs
    are computed once per clip (get_segmentations and get_embeddings are
    memoised, copies handed out) since hints only change the clustering."""
    import pyannote.audio
    import sklearn
    memoise_networks(pipeline)
    recorded = []
    for clip in args.clips:
        wav = args.data / "findit-dia-parity" / clip / "clip_16k.wav"
        audio, sr = sf.read(str(wav), dtype="float32", always_2d=True)
        assert sr == 16000
        waveform = torch.from_numpy(audio.T.copy())
        for hint in args.hints:
            key, value, suffix = hint_suffix(hint)
            if args.stable_argsort:
                suffix += ".stable_argsort"
            with torch.inference_mode():
                out = pipeline({"waveform": waveform, "sample_rate": 16000, "uri": clip},
                               **{key: value})
            with open(args.out / f"{clip}.{suffix}.rttm", "w") as f:
                out.speaker_diarization.write_rttm(f)
            with open(args.out / f"{clip}.{suffix}.exclusive.rttm", "w") as f:
                out.exclusive_speaker_diarization.write_rttm(f)
            recorded.append({"clip": clip, "hint": {key: value}, "files": f"{clip}.{suffix}[.exclusive].rttm",
                             "speakers": len(out.speaker_diarization.labels())})
            print(clip, hint, recorded[-1]["speakers"], "speakers", flush=True)
    info = {"generator": "tools/reference/record_pipeline.py --hints",
            "pyannote_audio": pyannote.audio.__version__, "torch": torch.__version__,
            "numpy": np.__version__, "scikit_learn": sklearn.__version__,
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "hints": args.hints, "stable_argsort": args.stable_argsort,
            "recorded": recorded}
    name = "hints.stable_argsort.json" if args.stable_argsort else "hints.json"
    (args.out / name).write_text(json.dumps(info, indent=2) + "\n")


if __name__ == "__main__":
    main()
