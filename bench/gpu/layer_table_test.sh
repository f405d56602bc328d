#!/usr/bin/env bash
# Runs layer_table_test.py with the system Python (layer_table.py needs no
# packages).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/layer_table_test.py"
