#!/usr/bin/python3
"""Kernel time of one rtfx_main pass, split by pipeline stage, from an
`ncu --csv --page raw --metrics gpu__time_duration.sum` log of rtfx_main.

    /usr/bin/python3 bench/gpu/pass_split.py ncu.csv [--pass N] [--top K]

Why by stream: the CUDA backend runs each stage on a stream of its own
(segmentation on one, the embedding model on another, the GPU linkage on a
third), so the stream a kernel ran on says which stage it belongs to
whatever library made the kernel (cuDNN's generated names carry no stage).
A stream is named by the first kernel on it that matches a stage's marker
(MARKERS); streams with no marker (cuDNN's algorithm search at load) are
"other".

Passes: rtfx_main's passes each end with one clustering, whose linkage runs
on the GPU; pass N (default: the last complete one) is the launches after
the (N-1)th linkage's last kernel up to its own. The launches after the last
linkage (rtfx_main's fbank-alone timing) belong to no pass. A run without
the GPU linkage (--gpu_linkage=false) has no pass boundaries: then the whole
log is one pass.

Prints per stage its kernel time and share of the pass, then per stage the
largest kernels (name, launches, time, share of the pass). Times are ncu's
(under its clock control); shares are what to compare across runs.
Standard library only.
"""

import argparse
import collections
import re
import sys

import ncu_summary  # same folder: sys.path[0] when run as a script

NAME_WIDTH = ncu_summary.NAME_WIDTH
# The stage of a stream: the first marker that one of its kernels matches.
MARKERS = [
    ("linkage", re.compile(r"MergeLoopKernel|InitialNeighboursKernel|MirrorKernel")),
    ("segmentation", re.compile(r"SincConvKernel|LstmResidentKernel|LstmCluster")),
    ("embeddings", re.compile(r"Conv3x3C32Kernel|StatsPoolKernel|FramesKernel|fprop")),
]


def read_rows(path):
    """[(name, stream, time)] of every launch, and the time unit."""
    return ncu_summary.launches(path, ("Kernel Name", "Stream"))


def stream_stages(rows):
    """{stream: stage} from the markers."""
    stages = {}
    for name, stream, _ in rows:
        if stream in stages:
            continue
        for stage, marker in MARKERS:
            if marker.search(name):
                stages[stream] = stage
                break
    return stages


def passes(rows, stages):
    """The launches of each complete pass, in order: a pass ends with the
    last launch of a run of consecutive linkage launches."""
    linkage = [stages.get(stream) == "linkage" for _, stream, _ in rows]
    ends = [i for i, is_linkage in enumerate(linkage)
            if is_linkage and (i + 1 == len(rows) or not linkage[i + 1])]
    if not ends:
        return [rows]
    out, start = [], 0
    for end in ends:
        out.append(rows[start:end + 1])
        start = end + 1
    return out


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv")
    parser.add_argument("--pass", dest="pass_number", type=int, default=0,
                        help="1-based pass; 0 = the last complete one")
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args(argv)
    rows, unit = read_rows(args.csv)
    if not rows:
        print("pass_split: no CSV rows in", args.csv)
        return 1
    stages = stream_stages(rows)
    all_passes = passes(rows, stages)
    n = args.pass_number or len(all_passes)
    if not 1 <= n <= len(all_passes):
        print(f"pass_split: pass {n} of {len(all_passes)}")
        return 1
    launches = all_passes[n - 1]
    total = sum(t for _, _, t in launches)
    by_stage = collections.Counter()
    kernels = collections.defaultdict(collections.Counter)
    counts = collections.defaultdict(collections.Counter)
    for name, stream, t in launches:
        stage = stages.get(stream, "other")
        by_stage[stage] += t
        kernels[stage][name[:NAME_WIDTH]] += t
        counts[stage][name[:NAME_WIDTH]] += 1
    print(f"pass {n} of {len(all_passes)}: {len(launches)} launches, "
          f"{total:.1f} {unit} of kernel time")
    print("| stage | kernel time | share |")
    print("|---|---:|---:|")
    for stage, t in by_stage.most_common():
        print(f"| {stage} | {t:.1f} {unit} | {100 * t / total:.1f} % |")
    for stage, _ in by_stage.most_common():
        print(f"{stage}:")
        for name, t in kernels[stage].most_common(args.top):
            print(f"  {100 * t / total:5.1f} % x{counts[stage][name]:<4d} {t:12.1f} {unit}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
