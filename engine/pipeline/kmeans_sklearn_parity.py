#!/usr/bin/env python3
"""Our KMeans (engine/pipeline/kmeans.h) against scikit-learn's, live.

Makes fresh random problems (new seed each run, printed), solves each with
    sklearn.cluster.KMeans(n_clusters=k, n_init=3, random_state=42,
                           copy_x=False).fit_predict(X)
exactly as pyannote.audio 4.0.x's VBxClustering calls it, under an OpenMP
limit of 1 or 2 threads (sklearn's n_threads), and with
engine/pipeline:kmeans_problems, and requires the same labels (same
partition AND same numbering) for every problem.

Problems are like the pipeline's: float32, unit-normalised rows (pyannote
fits on the normalised 256-d embeddings; 128-d as after the PLDA transform
too), clustered (spherical blobs of varied spread and size) or uniform (on
the sphere or in the cube), n from k to a few thousand, k = 2..8, plus a few
with duplicated points (empty clusters, the relocation path).

Both sides must run the same OpenBLAS kernels: kmeans.h is step for step
sklearn's, but an sgemm with FMA (SkylakeX) and one without (Prescott, what
Debian 12's OpenBLAS falls back to on Emerald Rapids, ADR 0080) round
differently, and a near-tie then ends in another partition. So the binary
runs with OPENBLAS_CORETYPE set to the kernel set sklearn's OpenBLAS
libraries report (threadpoolctl), and the test fails if it cannot.
"""

import argparse
import os
import struct
import subprocess
import sys
import time

import numpy as np
import sklearn
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_info, threadpool_limits


def unit_rows(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def make_problem(rng, large):
    k = int(rng.integers(2, 9))
    d = int(rng.choice([256, 256, 128, 16]))
    if large:
        n = int(rng.integers(1000, 3001))
    else:
        n = int(rng.integers(max(k, 8), 700))
    kind = rng.choice(["clustered", "clustered", "sphere", "cube", "duplicates"],
                      p=[0.35, 0.2, 0.2, 0.15, 0.1])
    if kind == "clustered":
        true_k = int(rng.integers(max(1, k - 2), k + 3))
        centers = rng.standard_normal((true_k, d))
        sizes = rng.dirichlet(np.ones(true_k)) * n
        labels = np.minimum(np.searchsorted(np.cumsum(sizes), np.arange(n) + 0.5), true_k - 1)
        spread = rng.uniform(0.05, 1.5)
        x = centers[labels] + spread * rng.standard_normal((n, d))
        x = unit_rows(x[rng.permutation(n)])
    elif kind == "sphere":
        x = unit_rows(rng.standard_normal((n, d)))
    elif kind == "cube":
        x = rng.random((n, d)).astype(np.float32)
    else:
        distinct = int(rng.integers(k, k + 4))
        base = unit_rows(rng.standard_normal((distinct, d)))
        x = base[rng.integers(0, distinct, n)].copy()
        x[: distinct] = base  # every distinct point present
    return str(kind), np.ascontiguousarray(x, dtype=np.float32), k


def sklearn_blas_core():
    """The one kernel set of the OpenBLAS libraries sklearn uses, or an error."""
    cores = {(lib["filepath"], lib.get("architecture"))
             for lib in threadpool_info() if lib.get("user_api") == "blas"}
    if not cores:
        return None, "threadpoolctl finds no BLAS library under sklearn"
    names = {str(arch).lower() for _, arch in cores}
    if len(names) != 1 or any(arch is None for _, arch in cores):
        return None, f"sklearn's BLAS libraries disagree or do not say their kernels: {sorted(cores)}"
    return next(arch for _, arch in cores), None


def binary_blas_core(binary, env):
    out = subprocess.run([binary, "--blas-core"], env=env, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--problems", type=int, default=1000)
    parser.add_argument("--large", type=int, default=40,
                        help="how many of the problems have 1000-3000 points")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    print(f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, seed {seed}")
    if sklearn.__version__ != "1.9.1":
        print("FAIL: kmeans.h reproduces scikit-learn 1.9.1 (tools/venv-requirements.txt)")
        return 1
    sk_core, error = sklearn_blas_core()
    if error:
        print(f"FAIL: {error}")
        return 1
    env = dict(os.environ, OPENBLAS_CORETYPE=sk_core)
    ours_core = binary_blas_core(args.binary, env)
    print(f"OpenBLAS kernels: sklearn {sk_core}, ours {ours_core}")
    if ours_core.lower() != sk_core.lower():
        print(f"FAIL: the binary's OpenBLAS runs {ours_core} kernels with "
              f"OPENBLAS_CORETYPE={sk_core}; the labels are comparable only "
              f"with sklearn's kernel set ({sk_core})")
        return 1
    rng = np.random.default_rng(seed)

    problems = []
    start = time.time()
    for p in range(args.problems):
        kind, x, k = make_problem(rng, large=p < args.large)
        threads = 2 if rng.random() < 0.25 else 1
        with threadpool_limits(limits=threads, user_api="openmp"):
            labels = KMeans(n_clusters=k, n_init=3, random_state=42,
                            copy_x=False).fit_predict(x.copy())
        problems.append((kind, x, k, threads, labels.astype(np.int32)))
    sk_time = time.time() - start

    path_in = os.path.join(args.work_dir, "problems.bin")
    path_out = os.path.join(args.work_dir, "labels.bin")
    with open(path_in, "wb") as f:
        f.write(struct.pack("<i", len(problems)))
        for _, x, k, threads, _ in problems:
            f.write(struct.pack("<4i", x.shape[0], x.shape[1], k, threads))
            f.write(x.tobytes())
    start = time.time()
    subprocess.run([args.binary, path_in, path_out], env=env, check=True)
    ours_time = time.time() - start
    ours = np.fromfile(path_out, dtype=np.int32)

    offset, failures = 0, []
    counts = {}
    for i, (kind, x, k, threads, labels) in enumerate(problems):
        got = ours[offset: offset + len(labels)]
        offset += len(labels)
        counts[kind] = counts.get(kind, 0) + 1
        if not np.array_equal(got, labels):
            same_partition = len({(a, b) for a, b in zip(got, labels)}) == len(set(labels))
            failures.append(f"problem {i} ({kind}, n={x.shape[0]}, d={x.shape[1]}, k={k}, "
                            f"threads={threads}): {int((got != labels).sum())} labels differ"
                            f"{' (same partition, other numbering)' if same_partition else ''}")
    if offset != len(ours):
        failures.append(f"binary wrote {len(ours)} labels, expected {offset}")
    sizes = [p[1].shape[0] for p in problems]
    print(f"{len(problems)} problems {counts}, n {min(sizes)}..{max(sizes)} "
          f"(mean {np.mean(sizes):.0f}), sklearn {sk_time:.1f} s, ours {ours_time:.1f} s")
    if failures:
        print(f"FAIL: {len(failures)} of {len(problems)} differ from scikit-learn (seed {seed}):")
        print("\n".join(failures[:50]))
        return 1
    print(f"PASS: all {len(problems)} label vectors identical to scikit-learn's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
