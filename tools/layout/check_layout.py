#!/usr/bin/env python3
"""Fails when a Bazel target depends directly on a part the layout forbids.

Usage: check_layout.py --layout LAYOUT_JSON [--copy COPY_JSON]
                       [--test_exceptions FILE] QUERY_XML

LAYOUT_JSON holds "parts" (name -> {"is": [folder prefixes]}) and "never"
([from, to, why] triples): ../shared/whiteboard.json or the copy of those two
lists in tools/layout/layout.json. QUERY_XML is the output of
`bazel query --noimplicit_deps --output=xml //...` (check_layout.sh runs it).

A target belongs to the part whose folder prefix is the longest match of its
package; targets outside every part (tests/, testing/, third_party/, ...) are
not checked and are no part. An edge is every direct input of a rule (its
deps, srcs, hdrs, data, tools: the query's rule-input list), so a target of
part A that names any target of part B for a never [A, B] fails the check.

Tests (rule classes ending in _test) and testonly targets are checked too,
with the one allowance of docs/conventions.md: they may also use engine/io
(part Io) to read their golden data (testing/ is no part, so it is always
allowed). Other test edges that break a never must be listed, each with its
reason, in --test_exceptions ("//from:target -> //to:target  # why").

When the layout also has "arrows" ([from, to] pairs, as the whiteboard
draws them), an edge of non-test code from one part to another that no arrow
draws fails too ("undrawn"): a new dependency between parts is drawn on the
whiteboard (and in the copy) before it lands. Test code is not held to the
arrows, only to the nevers.

Prints each offending edge with the never it breaks, or as undrawn, and exits
1 when there is one; exits 2 when an input cannot be read. A copy that differs from the
layout and exceptions that match no edge are reported as warnings.
"""
import argparse
import json
import sys
import xml.etree.ElementTree as ET

# docs/conventions.md: "a test may also use engine/io and testing/ to read its
# golden data". testing/ is no part; Io is the one part a test may add.
PARTS_A_TEST_MAY_ALSO_USE = frozenset({"Io"})


def load_layout(path):
    with open(path) as f:
        layout = json.load(f)
    parts = {name: list(part["is"]) for name, part in layout["parts"].items()}
    arrows = None
    if "arrows" in layout:
        arrows = set()
        for entry in layout["arrows"]:
            for name in entry[:2]:
                if name not in parts:
                    raise ValueError(f"{path}: arrow {entry} names no part '{name}'")
            arrows.add((entry[0], entry[1]))
    nevers = {}
    for entry in layout["never"]:
        src, dst = entry[0], entry[1]
        why = entry[2] if len(entry) > 2 else ""
        for name in (src, dst):
            if name not in parts:
                raise ValueError(f"{path}: never {entry} names no part '{name}'")
        nevers[(src, dst)] = why
    return parts, nevers, arrows


def load_test_exceptions(path):
    exceptions = {}
    if not path:
        return exceptions
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            text, _, why = line.partition("#")
            text = text.strip()
            if not text:
                continue
            src, arrow, dst = text.partition("->")
            if not arrow or not src.strip() or not dst.strip() or not why.strip():
                raise ValueError(f"{path}:{lineno}: want '//from:t -> //to:t  # why', got {line.strip()!r}")
            exceptions[(src.strip(), dst.strip())] = why.strip()
    return exceptions


def package_of(label):
    """'//engine/io:npy' -> 'engine/io'; None for external repositories."""
    if not label.startswith("//"):
        return None
    return label[2:].partition(":")[0]


def part_of(label, parts):
    package = package_of(label)
    if package is None:
        return None
    folder = package + "/"
    best, best_len = None, -1
    for name, prefixes in parts.items():
        for prefix in prefixes:
            if folder.startswith(prefix) and len(prefix) > best_len:
                best, best_len = name, len(prefix)
    return best


def attribute_of(rule, label):
    """The attribute that names `label` (for the message), or 'input'."""
    for child in rule:
        if child.tag == "list":
            if any(item.get("value") == label for item in child):
                return child.get("name")
        elif child.tag == "label" and child.get("value") == label:
            return child.get("name")
    return "input"


def is_test_code(rule):
    if rule.get("class", "").endswith("_test"):
        return True
    return any(b.get("name") == "testonly" and b.get("value") == "true"
               for b in rule.findall("boolean"))


def check(parts, nevers, exceptions, root, arrows=None):
    violations, used_exceptions, checked = [], set(), 0
    for rule in root.iter("rule"):
        name = rule.get("name")
        src_part = part_of(name, parts)
        if src_part is None:
            continue
        checked += 1
        test_code = is_test_code(rule)
        for dep in rule.iter("rule-input"):
            label = dep.get("name")
            dst_part = part_of(label, parts)
            if dst_part is None or dst_part == src_part:
                continue
            why = nevers.get((src_part, dst_part))
            if why is None:
                if arrows is not None and not test_code and (src_part, dst_part) not in arrows:
                    violations.append(
                        f"undrawn [{src_part}, {dst_part}] (no arrow on the whiteboard): {name} "
                        f"[{rule.get('class')}] -> {label} ({attribute_of(rule, label)})")
                continue
            if test_code and dst_part in PARTS_A_TEST_MAY_ALSO_USE:
                continue
            if test_code and (name, label) in exceptions:
                used_exceptions.add((name, label))
                continue
            kind = rule.get("class") + (" (test code)" if test_code else "")
            violations.append(
                f"never [{src_part}, {dst_part}] ({why}): {name} [{kind}] -> {label} "
                f"({attribute_of(rule, label)})")
    return violations, used_exceptions, checked


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layout", required=True)
    parser.add_argument("--copy", help="the committed copy, compared with --layout")
    parser.add_argument("--test_exceptions")
    parser.add_argument("query_xml")
    args = parser.parse_args()
    try:
        parts, nevers, arrows = load_layout(args.layout)
        exceptions = load_test_exceptions(args.test_exceptions)
        root = ET.parse(args.query_xml).getroot()
        copy = load_layout(args.copy) if args.copy and args.copy != args.layout else None
    except (OSError, ValueError, KeyError, TypeError, ET.ParseError) as e:
        print(f"layout check: cannot read its inputs: {e}", file=sys.stderr)
        return 2

    if copy is not None and copy != (parts, nevers, arrows):
        print(f"layout check: WARNING: {args.copy} differs from {args.layout} in its parts, "
              f"nevers or arrows; copy them over so that checkouts without it check the same layout")

    violations, used, checked = check(parts, nevers, exceptions, root, arrows)
    for stale in sorted(set(exceptions) - used):
        print(f"layout check: WARNING: test exception {stale[0]} -> {stale[1]} matches no edge; "
              f"remove it from {args.test_exceptions}")
    if checked == 0:
        print(f"layout check: no target of any part in {args.query_xml}", file=sys.stderr)
        return 2
    for line in violations:
        print(f"layout check: {line}")
    drawn = f" and {len(arrows)} arrows" if arrows is not None else ""
    print(f"layout check: {checked} targets in {len(parts)} parts against {len(nevers)} nevers"
          f"{drawn} ({args.layout}): {len(violations)} broken edge(s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
