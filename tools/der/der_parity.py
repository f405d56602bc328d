"""Checks //tools:der against pyannote.metrics on the same RTTM files.

Cases: the findit fixtures (the Rust port's hypotheses against pyannote's own
output) and fresh random RTTM pairs made on each run (several files per
pair, several speakers with overlaps, 3-decimal times as pyannote writes
them, some files on one side only, some with a speaker overlapping itself or
a repeated turn, some with a UEM for some of their files), each with collar 0, 0.25, 0.5 and
skip_overlap off and on. Every component of every file and of the total must
agree to 1e-9 relative (relative to the file's reference speech).
Run by der_parity_test.sh with the venv's python.
"""

import argparse
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyannote_der  # noqa: E402

KEYS = ["total", "correct", "missed", "false_alarm", "confusion"]
OPTIONS = [(collar, skip) for collar in (0.0, 0.25, 0.5)
           for skip in (False, True)]
FIXTURES = ["01_dialogue", "02_pyannote_sample", "03_dual_speaker",
            "04_three_speaker", "05_four_speaker"]


def ours(binary, reference, hypothesis, collar, skip_overlap, uem=None):
    command = [binary, f"--reference={reference}",
               f"--hypothesis={hypothesis}", f"--collar={collar!r}",
               "--format=json"]
    if skip_overlap:
        command.append("--skip-overlap")
    if uem:
        command.append(f"--uem={uem}")
    result = subprocess.run(command, capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{command} failed: {result.stderr}")
    return json.loads(result.stdout)


def close(a, b, scale):
    return abs(a - b) <= 1e-9 * max(1.0, scale)


def compare(name, mine, theirs):
    """Returns a list of mismatch descriptions."""
    problems = []
    my_files = {f["uri"]: f for f in mine["files"]}
    their_files = {f["uri"]: f for f in theirs["files"]}
    if sorted(my_files) != sorted(their_files):
        return [f"{name}: files differ: {sorted(my_files)} vs "
                f"{sorted(their_files)}"]
    pairs = [(uri, my_files[uri], their_files[uri]) for uri in my_files]
    pairs.append(("TOTAL", mine["total"], theirs["total"]))
    for uri, m, t in pairs:
        scale = abs(t["total"])
        for key in KEYS:
            if not close(m[key], t[key], scale):
                problems.append(f"{name} [{uri}] {key}: ours {m[key]!r} "
                                f"pyannote {t[key]!r}")
        if not close(m["der"], t["der"], 1.0):
            problems.append(f"{name} [{uri}] der: ours {m['der']!r} "
                            f"pyannote {t['der']!r}")
    return problems


def random_turns(rng, uri, speakers, prefix, duration):
    """Turns of `speakers` speakers; each speaker's own turns do not overlap
    (as in real RTTM), different speakers overlap freely."""
    lines = []
    for s in range(speakers):
        t = rng.uniform(0.0, 5.0)
        while t < duration:
            length = rng.choice([rng.uniform(0.05, 0.6),
                                 rng.uniform(0.5, 8.0)])
            lines.append((round(t, 3), round(length, 3), f"{prefix}{s}"))
            t += length + rng.choice([0.0, rng.uniform(0.0, 0.4),
                                      rng.uniform(0.2, 6.0)])
    return [f"SPEAKER {uri} 1 {start:.3f} {length:.3f} <NA> <NA> {label} "
            f"<NA> <NA>\n" for start, length, label in lines]


def chaotic_turns(rng, uri, speakers, prefix, duration):
    """Independent random turns: a speaker may overlap itself, and the same
    turn may appear twice."""
    lines = []
    for _ in range(rng.randrange(1, 40)):
        start, length = rng.uniform(0.0, duration), rng.uniform(0.001, 5.0)
        lines.append(f"SPEAKER {uri} 1 {start:.3f} {length:.3f} <NA> <NA> "
                     f"{prefix}{rng.randrange(speakers)} <NA> <NA>\n")
    if rng.random() < 0.3:
        lines.append(rng.choice(lines))
    return lines


def perturbed(rng, reference_lines, uri):
    """A plausible system output: reference turns with jittered boundaries,
    renamed and sometimes merged speakers, some dropped, some added."""
    rename = {}
    out = []
    for line in reference_lines:
        fields = line.split()
        start, length, label = float(fields[3]), float(fields[4]), fields[7]
        if rng.random() < 0.1:
            continue
        if label not in rename:
            rename[label] = f"SPK_{rng.randrange(0, 6):02d}"
        start = max(0.0, start + rng.gauss(0.0, 0.1))
        length = max(0.001, length + rng.gauss(0.0, 0.1))
        out.append(f"SPEAKER {uri} 1 {start:.3f} {length:.3f} <NA> <NA> "
                   f"{rename[label]} <NA> <NA>\n")
    for _ in range(rng.randrange(0, 4)):
        out.append(f"SPEAKER {uri} 1 {rng.uniform(0, 60):.3f} "
                   f"{rng.uniform(0.1, 3):.3f} <NA> <NA> "
                   f"SPK_{rng.randrange(0, 8):02d} <NA> <NA>\n")
    rng.shuffle(out)
    return out


def random_pair(rng, folder, index):
    reference, hypothesis, uem = [], [], []
    for f in range(rng.randrange(1, 4)):
        uri = f"rand{index}_{f}"
        duration = rng.uniform(5.0, 90.0)
        kind = rng.random()
        if kind < 0.2:
            ref = chaotic_turns(rng, uri, rng.randrange(1, 6), "spk", duration)
            hyp = chaotic_turns(rng, uri, rng.randrange(1, 6), "h", duration)
        else:
            ref = random_turns(rng, uri, rng.randrange(1, 6), "spk", duration)
            if kind < 0.6:
                hyp = perturbed(rng, ref, uri)
            else:
                hyp = random_turns(rng, uri, rng.randrange(1, 6), "h",
                                   duration)
        side = rng.random()
        if side < 0.05:
            hyp = []  # a file without hypothesis
        elif side < 0.10:
            ref = []  # a file without reference
        reference += ref
        hypothesis += hyp
        if rng.random() < 0.3:
            # Evaluated regions, possibly overlapping each other.
            for _ in range(rng.randrange(1, 4)):
                start = rng.uniform(0.0, duration)
                uem.append(f"{uri} 1 {start:.3f} "
                           f"{start + rng.uniform(0.5, 40.0):.3f}\n")
    ref_path = os.path.join(folder, f"random{index}.ref.rttm")
    hyp_path = os.path.join(folder, f"random{index}.hyp.rttm")
    with open(ref_path, "w") as f:
        f.writelines(reference)
    with open(hyp_path, "w") as f:
        f.writelines(hypothesis)
    uem_path = None
    if uem:
        uem_path = os.path.join(folder, f"random{index}.uem")
        with open(uem_path, "w") as f:
            f.writelines(uem)
    return ref_path, hyp_path, uem_path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--der-binary", required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--random-pairs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    print(f"random seed {seed} (rerun with --seed {seed})")
    rng = random.Random(seed)

    cases = []
    for name in FIXTURES:
        fixture = os.path.join(args.data_dir, "findit-dia-parity")
        cases.append((f"findit {name}",
                      os.path.join(fixture, name, "reference.rttm"),
                      os.path.join(fixture, f"dia-output-hyp_{name}.rttm"),
                      None))
    for i in range(args.random_pairs):
        ref, hyp, uem = random_pair(rng, args.work_dir, i)
        cases.append((f"random {i}" + (" (uem)" if uem else ""), ref, hyp,
                      uem))

    problems = []
    compared = 0
    with_uem = sum(1 for case in cases if case[3])
    print(f"{len(cases)} file pairs, {with_uem} with a UEM")
    for name, ref, hyp, uem in cases:
        for collar, skip in OPTIONS:
            label = f"{name} collar={collar} skip_overlap={skip}"
            mine = ours(args.der_binary, ref, hyp, collar, skip, uem)
            theirs = pyannote_der.score(ref, hyp, collar, skip, uem)
            problems += compare(label, mine, theirs)
            compared += 1
            if name.startswith("findit"):
                print(f"{label}: DER ours {100 * mine['total']['der']:.6f} % "
                      f"pyannote {100 * theirs['total']['der']:.6f} %")
    for problem in problems:
        print("MISMATCH", problem)
    print(f"{compared} comparisons, {len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
