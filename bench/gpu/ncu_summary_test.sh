#!/usr/bin/env bash
# Runs ncu_summary_test.py with the system Python (ncu_summary.py needs no
# packages).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/ncu_summary_test.py"
