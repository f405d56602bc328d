#!/usr/bin/env python3
"""Records reference outputs of pyannote.audio's OWN network classes.

pyannote's PyanNet (segmentation-3.0 hyper-parameters) and WeSpeakerResNet34
are built, the weights of a model directory written by
`bazel run //tools:make_random_models` are loaded into them with
load_state_dict(strict=True), and their outputs on 10 s windows of real audio
from the golden data folder are saved. The C++ networks must reproduce them.

    bash tools/reference/setup.sh
    bazel run //tools:make_random_models -- --out /tmp/random-models --seed 1
    .venv-reference/bin/python tools/reference/record.py \
        --models /tmp/random-models --out engine/models/testdata

Outputs (engine/models/testdata/README.md documents every key):
    reference_random_seed1.safetensors   the arrays (float32)
    reference_random_seed1.json          windows, masks, versions, hashes
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

SAMPLE_RATE = 16000
WINDOW = 160000
FRAMES = 589

# (audio file relative to the golden data folder, start in samples,
#  source of the speaker masks). Offsets are whole seconds so that windows
#  coincide with pyannote's 1 s-step windows (pyannote's chunks), whose
#  recorded binarized segmentation supplies real speaker masks.
WINDOWS = [
    ("findit-dia-parity/02_pyannote_sample/clip_16k.wav", 0 * SAMPLE_RATE,
     ("findit-dia-parity/02_pyannote_sample/segmentations.npz", "segmentations", 0)),
    ("findit-dia-parity/02_pyannote_sample/clip_16k.wav", 7 * SAMPLE_RATE,
     ("findit-dia-parity/02_pyannote_sample/segmentations.npz", "segmentations", 7)),
    ("speakrs-fixtures/test_3speakers.wav", 12 * SAMPLE_RATE,
     ("speakrs-fixtures/3speakers_segmentation_data.npy", None, 12)),
    ("pyannote-audio/tests-data/dev00.wav", 5 * SAMPLE_RATE, None),
]

MASK_NAMES = [
    "zero",            # all-zero mask: embedding = seg_1.bias
    "speaker0", "speaker1", "speaker2",  # binary masks of the 3 local speakers
    "clean0", "clean1", "clean2",        # same, overlapped frames removed
    "soft",            # uniform random weights in [0, 1) (fixed seed)
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_window(data: Path, rel: str, start: int) -> np.ndarray:
    audio, sr = sf.read(str(data / rel), dtype="float32", always_2d=True)
    assert sr == SAMPLE_RATE, (rel, sr)
    audio = audio[:, 0]
    window = audio[start:start + WINDOW]
    assert window.shape == (WINDOW,), (rel, start, window.shape)
    return window


def load_into(model: torch.nn.Module, path: Path) -> dict:
    tensors = load_file(str(path))
    fresh = model.state_dict()
    # The SincNet buffers are not learned: the C++ generator must write
    # exactly what asteroid computes, bit for bit.
    for name, value in fresh.items():
        if name.endswith(".window_") or name.endswith(".n_"):
            if not torch.equal(tensors[name], value):
                diff = (tensors[name] - value).abs().max().item()
                sys.exit(f"{path}: buffer {name} differs from asteroid's by {diff}")
    model.load_state_dict(tensors, strict=True)
    return tensors


def speaker_masks(data: Path, spec, window: np.ndarray, seg_model) -> np.ndarray:
    """(3, 589) binary masks: pyannote's recorded binarized segmentation of the
    window, or pyannote's powerset->multilabel of the model's own output."""
    if spec is not None:
        rel, key, index = spec
        arr = np.load(data / rel)
        arr = arr[key] if key is not None else arr
        return np.ascontiguousarray(arr[index].T.astype(np.float32))
    from pyannote.audio.utils.powerset import Powerset
    with torch.inference_mode():
        logp = seg_model(torch.from_numpy(window)[None, None])
        multi = Powerset(3, 2).to_multilabel(logp)  # hard, as Inference does
    return np.ascontiguousarray(multi[0].numpy().T.astype(np.float32))


def main() -> None:
    root = Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", required=True, type=Path,
                        help="model directory from make_random_models")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--data", type=Path,
                        default=Path(os.environ.get("DIARIZATION_TEST_DATA") or
                                     root.parent / "shared" / "data"),
                        help="golden data folder (default ../shared/data)")
    parser.add_argument("--name", default=None,
                        help="output base name (default reference_random_seed<N>)")
    parser.add_argument("--segmentation-only", action="store_true",
                        help="record only the segmentation outputs (for a model "
                             "directory whose embedding network is not the point)")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    manifest = json.loads((args.models / "manifest.json").read_text())
    seed = None
    source = manifest["segmentation"]["source"]
    if "(seed " in source:
        seed = int(source.split("(seed ")[1].split(")")[0])
    name = args.name or (f"reference_random_seed{seed}" if seed is not None
                         else "reference")

    seg = pyannote_models.build_pyannet()
    emb = pyannote_models.build_resnet34()
    load_into(seg, args.models / "segmentation.safetensors")
    load_into(emb, args.models / "embedding.safetensors")

    windows = np.stack([load_window(args.data, rel, start) for rel, start, _ in WINDOWS])
    waveforms = torch.from_numpy(windows)[:, None, :]  # (B, 1, 160000)
    B = len(WINDOWS)
    M = len(MASK_NAMES)

    with torch.inference_mode():
        log_probs = seg(waveforms).numpy()  # (B, 589, 7), LogSoftmax applied
        fbank = emb.compute_fbank(waveforms).numpy()  # (B, 998, 80)

    if args.segmentation_only:
        arrays = {
            "windows.offset_samples": np.array([s for _, s, _ in WINDOWS], np.int64),
            "segmentation.log_probs": log_probs.astype(np.float32),
        }
        write_outputs(args, name, arrays, manifest, seed, {
            "log_probs_min": float(log_probs.min()),
            "segmentation_source": manifest["segmentation"]["source"],
            "segmentation_random_weights": manifest["segmentation"]["random_weights"],
        })
        return

    masks = np.zeros((B, M, FRAMES), np.float32)
    rng = np.random.default_rng(1234)
    for b, (_, _, spec) in enumerate(WINDOWS):
        spk = speaker_masks(args.data, spec, windows[b], seg)
        clean = spk * (spk.sum(axis=0, keepdims=True) < 2)
        masks[b, 1:4] = spk
        masks[b, 4:7] = clean
        masks[b, 7] = rng.random(FRAMES, dtype=np.float32)

    with torch.inference_mode():
        # Per-mask runs, as pyannote's pipeline calls the model: the window
        # repeated once per mask, weights (batch, frames).
        rep = waveforms.repeat_interleave(M, dim=0)
        per_mask = emb(rep, torch.from_numpy(masks.reshape(B * M, FRAMES)))
        per_mask = per_mask.numpy().reshape(B, M, -1)
        # pyannote's multi-mask path: weights (batch, speakers, frames) give
        # (batch, speakers, 256) from one trunk pass.
        multi_mask = emb(waveforms, torch.from_numpy(masks)).numpy()
    assert multi_mask.shape == (B, M, 256), multi_mask.shape
    bias = emb.state_dict()["resnet.seg_1.bias"].numpy()
    assert np.array_equal(per_mask[0, 0], bias), "all-zero mask must give seg_1.bias"

    arrays = {
        "windows.offset_samples": np.array([s for _, s, _ in WINDOWS], np.int64),
        "segmentation.log_probs": log_probs.astype(np.float32),
        "embedding.fbank": fbank.astype(np.float32),
        "embedding.masks": masks,
        "embedding.per_mask": per_mask.astype(np.float32),
        "embedding.multi_mask": multi_mask.astype(np.float32),
    }
    write_outputs(args, name, arrays, manifest, seed, {
        "log_probs_min": float(log_probs.min()),
        "embedding_abs_max": float(np.abs(per_mask).max()),
        "embedding_norm_mean": float(np.linalg.norm(per_mask, axis=-1).mean()),
        "per_mask_vs_multi_mask_max_abs_diff": float(np.abs(per_mask - multi_mask).max()),
    }, mask_names=MASK_NAMES)


def write_outputs(args, name, arrays, manifest, seed, stats, mask_names=None):
    args.out.mkdir(parents=True, exist_ok=True)
    st_path = args.out / f"{name}.safetensors"
    save_file(arrays, str(st_path), metadata={"generator": "tools/reference/record.py"})

    import pyannote.audio
    info = {
        "generator": "tools/reference/record.py",
        "pyannote_audio": pyannote.audio.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "seed": seed,
        "models": {
            f"{role}.safetensors": manifest[role]["files"][0]["sha256"]
            for role in ("segmentation", "embedding")
        },
        "windows": [
            {"audio": rel, "audio_sha256": sha256(args.data / rel),
             "offset_samples": start, "num_samples": WINDOW,
             **({"masks_from": (f"{spec[0]}[{spec[1] or ''}][{spec[2]}] (pyannote's recorded "
                                "binarized segmentation of this chunk)")
                 if spec else "pyannote Powerset(3,2).to_multilabel of this model's output"}
                if mask_names is not None else {})}
            for rel, start, spec in WINDOWS
        ],
        "arrays": {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in arrays.items()},
        "stats": stats,
        "reference_file_sha256": sha256(st_path),
    }
    if mask_names is not None:
        info["mask_names"] = mask_names
    (args.out / f"{name}.json").write_text(json.dumps(info, indent=2) + "\n")
    print(json.dumps(stats))
    print(f"wrote {st_path} ({st_path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
