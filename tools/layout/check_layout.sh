#!/usr/bin/env bash
# The layout's nevers as a check: one `bazel query` of every target's direct
# inputs, held against the parts and nevers of ../shared/whiteboard.json
# (LAYOUT_WHITEBOARD overrides the path), or of the committed copy
# tools/layout/layout.json where the whiteboard is absent (a CI clone).
# Prints each broken edge; exit 1 when there is one, 2 when it cannot check.
# Run from anywhere inside the repository: bash tools/layout/check_layout.sh
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
HERE=tools/layout
COPY="$HERE/layout.json"
LAYOUT="${LAYOUT_WHITEBOARD:-$ROOT/../shared/whiteboard.json}"
[[ -f "$LAYOUT" ]] && LAYOUT="$(realpath "$LAYOUT")" || LAYOUT="$COPY"

PYTHON=/usr/bin/python3
[[ -x "$PYTHON" ]] || PYTHON=python3

QUERY_XML="$(mktemp)"
trap 'rm -f "$QUERY_XML"' EXIT
if ! bazel query --noimplicit_deps --output=xml //... >"$QUERY_XML" 2>"$QUERY_XML.err"; then
  cat "$QUERY_XML.err" >&2
  rm -f "$QUERY_XML.err"
  echo "layout check: bazel query failed" >&2
  exit 2
fi
rm -f "$QUERY_XML.err"
"$PYTHON" "$HERE/check_layout.py" --layout "$LAYOUT" --copy "$COPY" \
  --test_exceptions "$HERE/test_exceptions.txt" "$QUERY_XML"
