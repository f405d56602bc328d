#!/usr/bin/env python3
"""RTFx of pyannote.audio's own SpeakerDiarization, the baseline for rtfx_main.

The pipeline is built exactly as tools/reference/record_pipeline.py builds it
(community-1's configuration: VBxClustering, exclude-overlap embeddings,
batch 32, threshold 0.6, Fa 0.07, Fb 0.8, min_duration_off 0.0) around
pyannote's PyanNet and WeSpeakerResNet34 holding the model directory's
weights and its PLDA, moved to --device. The audio is built as
bench/gpu/rtfx_main.cc builds it: the same recordings, concatenated in the
same order, repeated until --hours of 16 kHz samples, cut there. One warm-up
run on the first --warmup_s seconds, then one timed run of the whole audio,
handed over in memory ({"waveform", "sample_rate"}: no file decoding, so
torchcodec is not needed).

    python3 bench/gpu/pyannote_baseline.py --models DIR --data DIR \
        --out OUTDIR [--hours 1] [--device cuda]

Prints one JSON line (audio_s, wall_s, rtfx, peak GPU memory, batch sizes,
versions, speakers, per-step times) and writes OUTDIR/pyannote_baseline.rttm
and OUTDIR/pyannote_baseline.json. TF32 is left to pyannote, which turns it
off on CUDA (pyannote/audio/utils/reproducibility.py: fix_reproducibility);
the JSON records the flags as they were during the run.
"""

import argparse
import hashlib
import json
import os
import sys
import time
import warnings
from pathlib import Path

# pyannote.audio 4 sends usage metrics unless told not to; the GPU machine has
# no network, and a benchmark should not wait on an exporter.
os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from scipy.io import wavfile  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "reference"))

# rtfx_main.cc's --files default, in its order.
FILES = [
    "findit-dia-parity/02_pyannote_sample/clip_16k.wav",
    "findit-dia-parity/03_dual_speaker/clip_16k.wav",
    "findit-dia-parity/05_four_speaker/clip_16k.wav",
    "speakrs-fixtures/test_3speakers.wav",
    "pyannote-audio/tests-data/dev00.wav",
]
SAMPLE_RATE = 16000


def read_wav(path: Path) -> np.ndarray:
    """Mono float32 samples as our decoder gives them (int16 / 32768)."""
    sr, x = wavfile.read(str(path))
    if sr != SAMPLE_RATE:
        raise SystemExit(f"{path}: {sr} Hz; the benchmark's recordings are 16 kHz")
    if x.ndim != 1:
        raise SystemExit(f"{path}: {x.shape[1]} channels; expected mono")
    if x.dtype == np.int16:
        return x.astype(np.float32) / 32768.0
    if x.dtype == np.float32:
        return x
    raise SystemExit(f"{path}: unsupported sample type {x.dtype}")


def build_audio(data: Path, files: list[str], hours: float) -> np.ndarray:
    """rtfx_main's loop: whole recordings in order until the target, the last
    one cut."""
    target = int(hours * 3600.0 * SAMPLE_RATE)
    sources = [read_wav(data / f) for f in files]
    parts, n = [], 0
    while n < target:
        for s in sources:
            take = min(len(s), target - n)
            parts.append(s[:take])
            n += take
            if n >= target:
                break
    return np.concatenate(parts)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", required=True, type=Path,
                        help="segmentation.safetensors, embedding.safetensors, plda/")
    parser.add_argument("--data", required=True, type=Path, help="golden data folder")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--files", default=",".join(FILES))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--segmentation_batch", type=int, default=32)
    parser.add_argument("--embedding_batch", type=int, default=32)
    parser.add_argument("--warmup_s", type=float, default=30.0)
    parser.add_argument("--check_imports", action="store_true",
                        help="also write imported_distributions.json (what the run imported)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    device = torch.device(args.device)

    t0 = time.perf_counter()
    import pyannote.audio
    from pyannote.audio.core.plda import PLDA
    from pyannote.audio.pipelines import SpeakerDiarization
    import pyannote_models

    seg = pyannote_models.build_pyannet()
    seg.load_state_dict(load_file(str(args.models / "segmentation.safetensors")), strict=True)
    emb = pyannote_models.build_resnet34()
    emb.load_state_dict(load_file(str(args.models / "embedding.safetensors")), strict=True)
    plda = PLDA.from_pretrained(str(args.models / "plda"))
    pipeline = SpeakerDiarization(segmentation=seg, embedding=emb, plda=plda,
                                  clustering="VBxClustering", embedding_exclude_overlap=True,
                                  segmentation_batch_size=args.segmentation_batch,
                                  embedding_batch_size=args.embedding_batch)
    pipeline.instantiate({"segmentation": {"min_duration_off": 0.0},
                          "clustering": {"threshold": 0.6, "Fa": 0.07, "Fb": 0.8}})
    pipeline.to(device)
    load_s = time.perf_counter() - t0

    audio = build_audio(args.data, args.files.split(","), args.hours)
    audio_s = len(audio) / SAMPLE_RATE
    waveform = torch.from_numpy(audio).unsqueeze(0)  # (channel, time) on the host

    cuda = device.type == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    # Wall-clock time at which each step handed its result to the hook
    # (pyannote calls hook(step, artifact) once per finished step).
    marks: list[tuple[str, float]] = []

    def hook(step, artifact, file=None, total=None, completed=None):
        if completed is None:
            marks.append((step, time.perf_counter()))

    def run(samples: torch.Tensor, uri: str):
        marks.clear()
        sync()
        start = time.perf_counter()
        with torch.inference_mode():
            result = pipeline({"waveform": samples, "sample_rate": SAMPLE_RATE, "uri": uri},
                              hook=hook)
        sync()
        wall = time.perf_counter() - start
        steps, prev = {}, start
        for step, t in marks:
            steps[step] = round(t - prev, 4)
            prev = t
        return result, wall, steps

    warm = waveform[:, : int(args.warmup_s * SAMPLE_RATE)]
    _, warm_s, _ = run(warm, "warmup")
    warm_peak = torch.cuda.max_memory_allocated(device) if cuda else 0
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    result, wall_s, steps = run(waveform, "baseline")

    diarization = result.speaker_diarization
    rttm = args.out / "pyannote_baseline.rttm"
    with open(rttm, "w") as f:
        diarization.write_rttm(f)

    report = {
        "audio_s": round(audio_s, 3),
        "wall_s": round(wall_s, 3),
        "rtfx": round(audio_s / wall_s, 2),
        "device": torch.cuda.get_device_name(device) if cuda else args.device,
        "peak_gpu_allocated_bytes": torch.cuda.max_memory_allocated(device) if cuda else 0,
        "peak_gpu_reserved_bytes": torch.cuda.max_memory_reserved(device) if cuda else 0,
        "warmup_peak_gpu_allocated_bytes": warm_peak,
        "segmentation_batch_size": pipeline.segmentation_batch_size,
        "embedding_batch_size": pipeline.embedding_batch_size,
        "segmentation_step": pipeline.segmentation_step,
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        "tf32_cudnn": torch.backends.cudnn.allow_tf32,
        "speakers": len(diarization.labels()),
        "rttm_turns": sum(1 for _ in diarization.itertracks()),
        "step_s": steps,
        "warmup_audio_s": warm.shape[1] / SAMPLE_RATE,
        "warmup_wall_s": round(warm_s, 3),
        "load_s": round(load_s, 3),
        "versions": {"pyannote.audio": pyannote.audio.__version__, "torch": torch.__version__,
                     "numpy": np.__version__, "python": sys.version.split()[0],
                     "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()},
        "models": {name: sha256(args.models / name)
                   for name in ("segmentation.safetensors", "embedding.safetensors",
                                "plda/plda.npz", "plda/xvec_transform.npz")},
        "files": args.files.split(","),
        "torch_threads": torch.get_num_threads(),
        "rttm": str(rttm),
    }
    line = json.dumps(report)
    (args.out / "pyannote_baseline.json").write_text(line + "\n")
    if args.check_imports:
        # Distribution of every imported module's file (from the installed
        # RECORDs), to compare with the wheels carried plus the GPU image.
        from importlib.metadata import distributions
        owner = {}
        for dist in distributions():
            for f in dist.files or []:
                if str(f).endswith((".py", ".so")):
                    owner[str(Path(dist.locate_file(f)).resolve())] = dist.metadata["Name"]
        used = {}
        for name, mod in list(sys.modules.items()):
            f = getattr(mod, "__file__", None)
            if f:
                d = owner.get(str(Path(f).resolve()), "(stdlib or unknown)")
                used.setdefault(d, []).append(name)
        (args.out / "imported_distributions.json").write_text(
            json.dumps({d: len(m) for d, m in sorted(used.items())}, indent=1) + "\n")
    print(line, flush=True)
    sys.stderr.flush()
    # Skip interpreter teardown: pyannote's telemetry objects may try to
    # flush to an unreachable endpoint at exit.
    os._exit(0)


if __name__ == "__main__":
    main()
