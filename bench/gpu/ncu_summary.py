#!/usr/bin/env python3
"""Sums kernel times from an `ncu --csv --page raw --metrics
gpu__time_duration.sum` log per kernel name and prints the largest.

    python3 bench/gpu/ncu_summary.py ncu.csv [top]
"""
import collections
import csv
import sys


def main() -> None:
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.reader(lines))
    if not rows:
        print("ncu_summary: no CSV rows in", path)
        return
    header = rows[0]
    name_col = header.index("Kernel Name")
    time_col = header.index("gpu__time_duration.sum")
    unit = rows[1][time_col] if len(rows) > 1 else "?"
    total = collections.Counter()
    count = collections.Counter()
    for r in rows[1:]:
        try:
            t = float(r[time_col].replace(",", ""))
        except (ValueError, IndexError):
            continue
        name = r[name_col][:90]
        total[name] += t
        count[name] += 1
    grand = sum(total.values())
    print(f"ncu: {sum(count.values())} kernels, total {grand:.1f} {unit}")
    for name, t in total.most_common(top):
        print(f"{t:12.1f} {unit} {100 * t / grand:5.1f}% x{count[name]:<5d} {name}")


if __name__ == "__main__":
    main()
