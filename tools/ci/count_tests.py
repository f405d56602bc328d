#!/usr/bin/env python3
"""Sums the test cases in the test.xml of each given test target.

Usage: count_tests.py BAZEL_TESTLOGS [TARGETS_FILE]
TARGETS_FILE lists one label per line (//pkg:name); a target without a
result counts as a failure. Without it, every test.xml under BAZEL_TESTLOGS
counts. Prints failing cases, then the closing line "N passed, M failed".
Exit status is 1 when any case failed or no case ran.
"""
import pathlib
import sys
import xml.etree.ElementTree as ET


def main() -> int:
    logs = pathlib.Path(sys.argv[1])
    passed = failed = skipped = 0
    if len(sys.argv) > 2:
        labels = [l.strip() for l in open(sys.argv[2]) if l.strip()]
        xmls = []
        for label in labels:
            pkg, _, name = label.lstrip("/").partition(":")
            xmls.append((label, logs / pkg / name / "test.xml"))
    else:
        xmls = [("//" + str(x.parent.relative_to(logs)), x)
                for x in sorted(logs.rglob("test.xml"))]
    for target, xml in xmls:
        if not xml.exists():
            print(f"FAILED (no result) {target}")
            failed += 1
            continue
        try:
            root = ET.parse(xml).getroot()
        except ET.ParseError:
            print(f"FAILED (unreadable result) {target}")
            failed += 1
            continue
        cases = list(root.iter("testcase"))
        if not cases:
            failed += 1
            print(f"FAILED (no test case) {target}")
            continue
        for case in cases:
            name = f"{target} {case.get('classname', '')}.{case.get('name', '')}"
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
                print(f"FAILED {name}")
            elif case.get("result") == "suppressed" or case.find("skipped") is not None:
                skipped += 1
                print(f"SKIPPED {name}")
            else:
                passed += 1
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
