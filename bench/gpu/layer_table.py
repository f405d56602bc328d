#!/usr/bin/python3
"""The per-layer table of the embedding trunk (issue 11) from rtfx_main logs.

rtfx_main --conv_api=graph|fastest prints one "graph conv ..." line per trunk
convolution and batch shape (GraphConv2d::Describe,
engine/models/cuda/embedding/cudnn_graph_conv.cc). This script reads the
timed lines of one or more runs and prints a markdown table: per layer its
milliseconds, TFLOP/s and share of the GPU's dense peak (H200: TF32 494.7,
FP16 989.4 TFLOP/s), one group of columns per run, and a total row (summed
time; total FLOP over it).

    /usr/bin/python3 bench/gpu/layer_table.py [--batch N] [--peak TFLOPS]
        [LABEL=]LOG [[LABEL=]LOG ...]

A run's label is LABEL, else the first line of its log when that is a
configuration line (it starts with "--"), else the file name.
Only lines at one batch size count (--batch, default each run's largest):
the smaller batches mostly reuse the engines timed at the largest one and
carry no time of their own. The precision of a line is its "tf32"/"fp16"
token, or for logs of older binaries without it the run's "embedding
<precision>" header; --peak overrides the peak for every run.

Standard library only (runs with /usr/bin/python3 on any machine).
"""

import argparse
import os
import re
import sys

PEAK_TFLOPS = {"tf32": 494.7, "fp16": 989.4}

# graph conv NAME K<-C RxS/STRIDE on NxCxHxW EPILOGUE [tf32|fp16]: CHOICE
LINE = re.compile(
    r"graph conv (?P<name>\S+) (?P<k>\d+)<-(?P<c>\d+) (?P<r>\d+)x(?P<s>\d+)/"
    r"(?P<stride>\d+) on (?P<n>\d+)x\d+x(?P<h>\d+)x(?P<w>\d+) "
    r"(?P<epilogue>conv\S*)(?: (?P<dtype>tf32|fp16))?: (?P<choice>.*)$")
NUMBER = r"([0-9][0-9.]*(?:[eE][-+]?[0-9]+)?)"
# A graph engine timed here, or built from the engine cache and timed.
GRAPH_TIMED = re.compile(
    r"^graph (?P<engine>\S+) \((?:from the engine cache; )?" + NUMBER +
    r" ms = ")
# "fastest" kept the legacy call: "(... (L vs G ms))".
LEGACY_FASTER = re.compile(r"^legacy \(faster than the best graph engine "
                           r"\S+ \(" + NUMBER + r" vs " + NUMBER + r" ms\)")
HEADER_PRECISION = re.compile(r"\bembedding (fp32|tf32|mixed) \(")


def flop(k, c, r, s, stride, n, h, w):
    """Multiply-adds x 2 of one convolution (padding r//2, as the trunk's)."""
    out_h = (h + 2 * (r // 2) - r) // stride + 1
    out_w = (w + 2 * (s // 2) - s) // stride + 1
    return 2.0 * n * k * c * r * s * out_h * out_w


def parse_log(text):
    """Returns (header precision or None, [layer dicts]) of one run."""
    header = None
    m = HEADER_PRECISION.search(text)
    if m:
        header = {"mixed": "fp16", "tf32": "tf32", "fp32": "tf32"}[m.group(1)]
    layers = []
    for raw in text.splitlines():
        m = LINE.search(raw)
        if not m:
            continue
        choice = m.group("choice")
        g = GRAPH_TIMED.match(choice)
        lf = LEGACY_FASTER.match(choice)
        if g:
            api, engine, ms = "graph", g.group("engine"), float(g.group(2))
        elif lf:
            api, engine, ms = "legacy", "legacy", float(lf.group(1))
        else:
            api = "graph" if choice.startswith("graph ") else "legacy"
            engine, ms = None, None  # reused or untimed: no time of its own
        dims = {key: int(m.group(key))
                for key in ("k", "c", "r", "s", "stride", "n", "h", "w")}
        layers.append({
            "name": m.group("name"),
            "epilogue": m.group("epilogue"),
            "dtype": m.group("dtype"),
            "api": api,
            "engine": engine,
            "ms": ms,
            "flop": flop(**dims),
            **dims,
        })
    return header, layers


def run_label(spec, text):
    if "=" in spec and not os.path.exists(spec):
        label, _ = spec.split("=", 1)
        return label
    first = text.splitlines()[0].strip() if text.strip() else ""
    if first.startswith("--"):
        return first
    return os.path.basename(spec)


def build_table(runs, batch=None, peak=None):
    """runs: [(label, text)]. Returns the markdown table as a string."""
    columns = []  # per run: (label, {name: layer}, peak)
    order = []
    for label, text in runs:
        header, layers = parse_log(text)
        if not layers:
            raise ValueError(f"{label}: no 'graph conv' lines")
        n = batch if batch is not None else max(l["n"] for l in layers)
        at = {}
        for l in layers:
            if l["n"] != n:
                continue
            # A layer may appear in several logs' passes; keep the first
            # timed line.
            if l["name"] not in at or at[l["name"]]["ms"] is None:
                at[l["name"]] = l
            if l["name"] not in order:
                order.append(l["name"])
        if not at:
            raise ValueError(f"{label}: no 'graph conv' lines at batch {n}")
        dtypes = {l["dtype"] or header for l in at.values()}
        dtypes.discard(None)
        if peak is not None:
            run_peak = peak
        elif len(dtypes) == 1:
            run_peak = PEAK_TFLOPS[dtypes.pop()]
        else:
            raise ValueError(
                f"{label}: precision unknown or mixed ({sorted(dtypes)}); "
                "pass --peak")
        columns.append((f"{label} (batch {n})", at, run_peak))

    head = "| layer | shape |"
    rule = "|---|---|"
    for label, _, run_peak in columns:
        head += f" {label}: ms | TFLOP/s | % of {run_peak:g} |"
        rule += "---:|---:|---:|"
    lines = [head, rule]

    def cells(layer, run_peak):
        if layer is None:
            return " — | — | — |"
        if layer["ms"] is None:
            return f" ({layer['api']}, untimed) | — | — |"
        tflops = layer["flop"] / (layer["ms"] * 1e-3) / 1e12
        tag = " (legacy)" if layer["api"] == "legacy" else ""
        return (f" {layer['ms']:.4f}{tag} | {tflops:.1f} |"
                f" {100 * tflops / run_peak:.1f} % |")

    for name in order:
        any_layer = next(at[name] for _, at, _ in columns if name in at)
        shape = (f"{any_layer['k']}<-{any_layer['c']} {any_layer['r']}x"
                 f"{any_layer['s']}/{any_layer['stride']} on "
                 f"{any_layer['h']}x{any_layer['w']}")
        row = f"| {name} | {shape} |"
        for _, at, run_peak in columns:
            row += cells(at.get(name), run_peak)
        lines.append(row)
    total = "| **total** | |"
    for _, at, run_peak in columns:
        timed = [l for l in at.values() if l["ms"] is not None]
        ms = sum(l["ms"] for l in timed)
        fl = sum(l["flop"] for l in timed)
        missing = len(at) - len(timed)
        note = f" ({missing} untimed)" if missing else ""
        if ms > 0:
            tflops = fl / (ms * 1e-3) / 1e12
            total += (f" **{ms:.3f}**{note} | **{tflops:.1f}** |"
                      f" **{100 * tflops / run_peak:.1f} %** |")
        else:
            total += f" —{note} | — | — |"
    lines.append(total)
    return "\n".join(lines) + "\n"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("logs", nargs="+", help="[LABEL=]rtfx_main log")
    p.add_argument("--batch", type=int, default=None,
                   help="batch size whose lines count (default: largest)")
    p.add_argument("--peak", type=float, default=None,
                   help="dense peak TFLOP/s for every run (default: by "
                        "precision, H200)")
    a = p.parse_args(argv)
    runs = []
    for spec in a.logs:
        path = spec.split("=", 1)[1] if ("=" in spec and
                                         not os.path.exists(spec)) else spec
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        runs.append((run_label(spec, text), text))
    try:
        sys.stdout.write(build_table(runs, a.batch, a.peak))
    except ValueError as e:
        print(f"layer_table.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
