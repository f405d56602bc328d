#!/usr/bin/env python3
"""Our AHC (engine/pipeline/ahc.h) against scipy's, live.

Makes fresh random problems (new seed each run, printed) and solves each as
pyannote.audio 4.0.x's VBxClustering does:
    normed = x / np.linalg.norm(x, axis=1, keepdims=True)      # float32
    Z = scipy.cluster.hierarchy.linkage(normed, method="centroid",
                                        metric="euclidean")
    labels = np.unique(fcluster(Z, threshold, criterion="distance") - 1,
                       return_inverse=True)[1]
and with engine/pipeline:ahc_problems (NormalizeRowsF32, PdistSquare,
CentroidLinkageSquare, AhcCluster).

Our pdist is scipy's direct float64 sum for every n the exact algorithm
takes (up to AhcOptions::exact_max_n, 4096), so every row of Z must be
identical (both ids, the size and the height to the bit) and so must the
labels. Problems are like the pipeline's: float32 embeddings in speaker
blobs of varied spread and size (256-d, 128-d, 16-d), uniform on the
sphere, and with exact duplicates, whose zero distances test the
tie-breaking; a few (--large) with more than 1024 points, up to 3000;
thresholds 0.6 (pyannote's community-1 value) or drawn from 0.2..1.4.
"""

import argparse
import os
import struct
import subprocess
import sys
import time

import numpy as np
import scipy
from scipy.cluster.hierarchy import fcluster, linkage

LARGE_N = 1024  # problems above this are the slow ones (scipy and ours)


def make_problem(rng, large):
    d = int(rng.choice([256, 256, 128, 16]))
    n = int(rng.integers(LARGE_N + 1, 3001)) if large else int(rng.integers(2, LARGE_N + 1))
    kinds = ["clustered", "sphere", "duplicates"]
    kind = str(rng.choice(kinds, p=[0.6, 0.2, 0.2]))
    if kind == "clustered":
        speakers = int(rng.integers(1, 12))
        centers = rng.standard_normal((speakers, d))
        sizes = rng.dirichlet(np.ones(speakers)) * n
        labels = np.minimum(np.searchsorted(np.cumsum(sizes), np.arange(n) + 0.5), speakers - 1)
        spread = rng.uniform(0.1, 1.5)
        x = centers[labels] + spread * rng.standard_normal((n, d))
        x = x[rng.permutation(n)]
    elif kind == "sphere":
        x = rng.standard_normal((n, d))
    else:
        distinct = int(rng.integers(1, max(2, n // 2) + 1))
        base = rng.standard_normal((distinct, d))
        x = base[rng.integers(0, distinct, n)]
    x = (x * rng.uniform(0.5, 20.0)).astype(np.float32)  # raw embedding scale
    threshold = 0.6 if rng.random() < 0.5 else float(rng.uniform(0.2, 1.4))
    return kind, np.ascontiguousarray(x), threshold


def scipy_answer(x, threshold):
    normed = x / np.linalg.norm(x, axis=1, keepdims=True)
    z = linkage(normed, method="centroid", metric="euclidean")
    flat = fcluster(z, threshold, criterion="distance") - 1
    _, labels = np.unique(flat, return_inverse=True)
    return z, labels.astype(np.int32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--problems", type=int, default=300)
    parser.add_argument("--large", type=int, default=6,
                        help="how many of the problems have more than 1024 points")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    print(f"scipy {scipy.__version__}, numpy {np.__version__}, seed {seed}")
    rng = np.random.default_rng(seed)

    problems = []
    start = time.time()
    for p in range(args.problems):
        kind, x, threshold = make_problem(rng, large=p < args.large)
        z, labels = scipy_answer(x, threshold)
        problems.append((kind, x, threshold, z, labels))
    scipy_time = time.time() - start

    path_in = os.path.join(args.work_dir, "ahc_problems.bin")
    path_out = os.path.join(args.work_dir, "ahc_answers.bin")
    with open(path_in, "wb") as f:
        f.write(struct.pack("<i", len(problems)))
        for _, x, threshold, _, _ in problems:
            f.write(struct.pack("<2id", x.shape[0], x.shape[1], threshold))
            f.write(x.tobytes())
    start = time.time()
    subprocess.run([args.binary, path_in, path_out], check=True)
    ours_time = time.time() - start
    raw = open(path_out, "rb").read()

    offset, failures, counts = 0, [], {}
    for i, (kind, x, threshold, z, labels) in enumerate(problems):
        n = x.shape[0]
        counts[kind] = counts.get(kind, 0) + 1
        zb, lb = 8 * 4 * (n - 1), 4 * n
        if offset + zb + lb > len(raw):
            failures.append(f"problem {i}: the binary's output ends early")
            break
        ours_z = np.frombuffer(raw, dtype=np.float64, count=4 * (n - 1), offset=offset).reshape(n - 1, 4)
        ours_labels = np.frombuffer(raw, dtype=np.int32, count=n, offset=offset + zb)
        offset += zb + lb
        what = f"problem {i} ({kind}, n={n}, d={x.shape[1]}, t={threshold:.3f})"
        same_merges = np.array_equal(ours_z[:, [0, 1, 3]], z[:, [0, 1, 3]])
        same_heights = np.array_equal(ours_z[:, 2], z[:, 2])
        if not same_merges:
            k = int(np.argmax(np.any(ours_z[:, [0, 1, 3]] != z[:, [0, 1, 3]], axis=1)))
            failures.append(f"{what}: merge {k} differs: ours {ours_z[k].tolist()}, scipy {z[k].tolist()}")
        elif not same_heights:
            k = int(np.argmax(np.abs(ours_z[:, 2] - z[:, 2])))
            failures.append(f"{what}: height of merge {k}: ours {ours_z[k, 2]!r}, scipy {z[k, 2]!r}")
        if not np.array_equal(ours_labels, labels):
            failures.append(f"{what}: {int((ours_labels != labels).sum())} labels differ")
    if offset != len(raw):
        failures.append(f"binary wrote {len(raw)} bytes, expected {offset}")
    sizes = [p[1].shape[0] for p in problems]
    print(f"{len(problems)} problems {counts}, n {min(sizes)}..{max(sizes)} "
          f"(mean {np.mean(sizes):.0f}), scipy {scipy_time:.1f} s, ours {ours_time:.1f} s")
    if failures:
        print(f"FAIL: {len(failures)} differences from scipy (seed {seed}):")
        print("\n".join(failures[:50]))
        return 1
    print(f"PASS: all {len(problems)} linkages and label vectors identical to scipy's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
