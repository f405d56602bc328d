#!/usr/bin/env bash
# Runs pass_split_test.py with the system Python (pass_split.py needs no
# packages).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/pass_split_test.py"
