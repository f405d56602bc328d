#!/usr/bin/env python3
"""Times pyannote.audio's own PyanNet and WeSpeakerResNet34 (PyTorch, CPU)
on the same windows, masks, batch and thread count as cpu_networks_bench.

Prints per-window times of: segmentation; the embedding model as pyannote's
pipeline calls it (the window repeated once per local speaker, 3 trunk
passes); and pyannote's multi-mask path (weights (B, 3, 589), one trunk pass).
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "reference"))
import pyannote_models  # noqa: E402

W, F = 160000, 589


CPU = {}


def best_of(fn, repeats, name=None):
    """Best wall time of `repeats` runs after a warm-up; the mean process CPU
    time (all threads) per run goes to CPU[name]."""
    fn()  # warm-up
    best = float("inf")
    c0 = time.process_time()
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    CPU[name] = (time.process_time() - c0) / repeats
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", required=True, type=Path)
    p.add_argument("--audio", type=Path,
                   default=ROOT.parent / "shared" / "data" / "pyannote-audio" / "sample" / "sample.wav")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", choices=["seg", "emb", "multi"], default=None,
                   help="time one of them (for CPU-time measurements)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)

    seg = pyannote_models.build_pyannet()
    seg.load_state_dict(load_file(str(a.models / "segmentation.safetensors")), strict=True)
    emb = pyannote_models.build_resnet34()
    emb.load_state_dict(load_file(str(a.models / "embedding.safetensors")), strict=True)

    audio, sr = sf.read(str(a.audio), dtype="float32")
    n = len(audio)
    # Same windows as cpu_networks_bench: 1 s steps, wrapping around.
    idx = (16000 * np.arange(a.batch)[:, None] + np.arange(W)[None, :]) % n
    x = torch.from_numpy(audio[idx])[:, None, :]
    masks = np.zeros((a.batch, 3, F), np.float32)
    f = np.arange(F)
    for s in range(3):
        masks[:, s, :] = ((f // 100) % 3 == s)
    masks_t = torch.from_numpy(masks)

    t_seg = t_emb = t_multi = 0.0
    with torch.inference_mode():
        if a.only in (None, "seg"):
            t_seg = best_of(lambda: seg(x), a.repeats, "seg")
        rep = x.repeat_interleave(3, dim=0)
        flat = masks_t.reshape(-1, F)
        if a.only in (None, "emb"):
            t_emb = best_of(lambda: emb(rep, flat), a.repeats, "emb")
        if a.only in (None, "multi"):
            t_multi = best_of(lambda: emb(x, masks_t), a.repeats, "multi")
    b = a.batch
    print(f"pytorch {torch.__version__} ({a.threads} threads), batch {b}: "
          f"segmentation {1e3 * t_seg / b:.1f} ms/window, embedding as the "
          f"pipeline calls it (3 trunk passes) {1e3 * t_emb / b:.1f} ms/window, "
          f"multi-mask (1 trunk pass) {1e3 * t_multi / b:.1f} ms/window")
    print(f"RESULT impl=pytorch threads={a.threads} batch={b} seg_ms={1e3 * t_seg / b:.3f} "
          f"emb_ms={1e3 * t_emb / b:.3f} emb_multi_ms={1e3 * t_multi / b:.3f} "
          f"seg_cpu_ms={1e3 * CPU.get('seg', 0) / b:.3f} "
          f"emb_cpu_ms={1e3 * CPU.get('emb', 0) / b:.3f} "
          f"emb_multi_cpu_ms={1e3 * CPU.get('multi', 0) / b:.3f}")


if __name__ == "__main__":
    main()
