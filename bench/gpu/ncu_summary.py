#!/usr/bin/env python3
"""Sums kernel times from `ncu --csv --page raw --metrics
gpu__time_duration.sum` logs per kernel name.

    python3 bench/gpu/ncu_summary.py ncu.csv [top]
        the largest kernels: total, share, launches
    python3 bench/gpu/ncu_summary.py A.csv B.csv [top] [--exclude REGEX]
        a build against its baseline: per kernel name, launches and the time
        per launch in each, and B/A of the totals (names in either run,
        largest first by the larger total); --exclude drops names that
        match (e.g. "fprop" when the convolutions are not what changed)

Names are cut to 90 characters, so template arguments past that merge.
"""
import collections
import csv
import re
import sys

NAME_WIDTH = 90


def launches(path, columns=("Kernel Name",)):
    """([(the named columns' values..., time)] of every launch, the time
    unit) of one ncu CSV log: ncu's own lines skipped, the units row read."""
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.reader(lines))
    if not rows:
        return [], "?"
    header = rows[0]
    cols = [header.index(c) for c in columns]
    time_col = header.index("gpu__time_duration.sum")
    unit = "?"
    out = []
    for r in rows[1:]:
        try:
            t = float(r[time_col].replace(",", ""))
        except (ValueError, IndexError):
            if len(r) > time_col and r[time_col]:
                unit = r[time_col]  # the units row
            continue
        out.append((*(r[c] for c in cols), t))
    return out, unit


def read(path):
    """(total time per name, launches per name, unit) of one ncu CSV log."""
    total = collections.Counter()
    count = collections.Counter()
    rows, unit = launches(path)
    for name, t in rows:
        name = name[:NAME_WIDTH]
        total[name] += t
        count[name] += 1
    return total, count, unit


def one(path, top):
    total, count, unit = read(path)
    if not total:
        print("ncu_summary: no CSV rows in", path)
        return
    grand = sum(total.values())
    print(f"ncu: {sum(count.values())} kernels, total {grand:.1f} {unit}")
    for name, t in total.most_common(top):
        print(f"{t:12.1f} {unit} {100 * t / grand:5.1f}% x{count[name]:<5d} {name}")


def ab(path_a, path_b, top, exclude):
    ta, ca, unit_a = read(path_a)
    tb, cb, unit_b = read(path_b)
    if not ta or not tb:
        print("ncu_summary: no CSV rows in", path_a if not ta else path_b)
        return
    if unit_a != unit_b:
        print(f"ncu_summary: units differ ({unit_a} vs {unit_b})")
        return
    names = [n for n in set(ta) | set(tb) if not (exclude and re.search(exclude, n))]
    names.sort(key=lambda n: -max(ta[n], tb[n]))
    sa = sum(ta[n] for n in names)
    sb = sum(tb[n] for n in names)
    print(f"ncu A {path_a}: {sa:.1f} {unit_a}; B {path_b}: {sb:.1f} {unit_b}; "
          f"B/A {sb / sa:.3f}" + (f" (names matching {exclude!r} left out)" if exclude else ""))
    print(f"{'A launches':>10} {'A per launch':>13} {'B launches':>10} {'B per launch':>13} {'B/A':>6}  kernel")
    for n in names[:top]:
        per_a = f"{ta[n] / ca[n]:13.1f}" if ca[n] else f"{'-':>13}"
        per_b = f"{tb[n] / cb[n]:13.1f}" if cb[n] else f"{'-':>13}"
        ratio = f"{tb[n] / ta[n]:6.3f}" if ta[n] and tb[n] else f"{'-':>6}"
        print(f"{ca[n]:10d} {per_a} {cb[n]:10d} {per_b} {ratio}  {n}")


def main() -> None:
    args = sys.argv[1:]
    exclude = None
    if "--exclude" in args:
        i = args.index("--exclude")
        exclude = args[i + 1]
        del args[i:i + 2]
    csvs = [a for a in args if not a.isdigit()]
    nums = [int(a) for a in args if a.isdigit()]
    top = nums[0] if nums else 25
    if len(csvs) == 1:
        one(csvs[0], top)
    elif len(csvs) == 2:
        ab(csvs[0], csvs[1], top, exclude)
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
