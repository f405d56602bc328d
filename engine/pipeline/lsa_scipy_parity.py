#!/usr/bin/env python3
"""Our maximum-weight assignment (engine/pipeline/linear_sum_assignment.h)
against scipy.optimize.linear_sum_assignment(maximize=True), live.

Fresh random problems each run (the seed is printed): rectangular and
square, 1-9 rows and columns, scores with many exact ties (small integers,
quarter steps, whole milliseconds as the DER's co-occurrence durations are,
zero rows as speakers that never co-occur) and without. Where several
assignments are optimal, scipy's rules pick one; pyannote's constrained
assignment and its DER mapping both take scipy's, so ours must be the same
assignment, not just another optimal one.
"""

import argparse
import os
import random
import subprocess
import sys

import numpy as np
from scipy.optimize import linear_sum_assignment


def make_problem(rng):
    rows, cols = int(rng.integers(1, 10)), int(rng.integers(1, 10))
    kind = int(rng.integers(0, 4))
    if kind == 0:
        a = rng.integers(0, 3, (rows, cols)).astype(float)
    elif kind == 1:
        a = np.round(rng.random((rows, cols)) * 4) / 4
    elif kind == 2:
        a = np.round(rng.random((rows, cols)) * 10, 3)  # milliseconds
    else:
        a = rng.standard_normal((rows, cols))
    if rng.random() < 0.3:
        a[int(rng.integers(0, rows))] = 0.0
    return a


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--problems", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    print(f"random seed {seed} (rerun with LSA_PARITY_SEED={seed})")
    rng = np.random.default_rng(seed)
    problems = [make_problem(rng) for _ in range(args.problems)]
    text = "".join(
        f"{a.shape[0]} {a.shape[1]} " + " ".join(repr(float(x)) for x in a.ravel()) + "\n"
        for a in problems)
    run = subprocess.run([args.binary], input=text, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAIL: {args.binary} exited {run.returncode}: {run.stderr[:500]}")
        return 1
    lines = run.stdout.strip("\n").split("\n")
    if len(lines) != len(problems):
        print(f"FAIL: {len(lines)} answers for {len(problems)} problems")
        return 1
    mismatches = 0
    for a, line in zip(problems, lines):
        ours = [int(x) for x in line.split()]
        rows, cols = linear_sum_assignment(a, maximize=True)
        want = [-1] * a.shape[0]
        for r, c in zip(rows, cols):
            want[r] = int(c)
        if ours != want:
            mismatches += 1
            if mismatches <= 5:
                print(f"MISMATCH {a.tolist()}: ours {ours}, scipy {want}")
    ties = sum(1 for a in problems if len(np.unique(a)) < a.size)
    print(f"{len(problems)} problems ({ties} with tied scores), {mismatches} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
