#!/usr/bin/env bash
# check_layout.py against hand-written query outputs whose broken edges are
# known by construction: each forbidden edge fails and is named, allowed ones
# pass (arrows, test code into engine/io, listed test exceptions), the
# longest folder prefix decides the part, and the committed layout copy's
# nevers are the ones enforced.
set -uo pipefail

CHECK="tools/layout/check_layout.py"
COPY="tools/layout/layout.json"
PYTHON=/usr/bin/python3
[[ -x "$PYTHON" ]] || PYTHON=python3
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
failures=0

# rule CLASS NAME [testonly] -- INPUT... : one <rule> element.
rule() {
  local class="$1" name="$2" testonly=""
  shift 2
  if [[ "${1:-}" == testonly ]]; then testonly='<boolean name="testonly" value="true"/>'; shift; fi
  [[ "${1:-}" == -- ]] && shift
  echo "<rule class=\"$class\" name=\"$name\">$testonly<list name=\"deps\">"
  local input
  for input in "$@"; do echo "<label value=\"$input\"/>"; done
  echo "</list>"
  for input in "$@"; do echo "<rule-input name=\"$input\"/>"; done
  echo "</rule>"
}

# query FILE RULES...: wraps rule elements into a query output.
query() {
  local file="$1"
  shift
  { echo '<?xml version="1.1" encoding="UTF-8"?><query version="2">'; printf '%s\n' "$@"; echo '</query>'; } >"$file"
}

# expect NAME RC [PATTERN] -- ARGS...: runs the check, wants exit RC and
# (when given) PATTERN in its output.
expect() {
  local name="$1" want_rc="$2" pattern="$3"
  shift 4
  local out rc
  out="$("$PYTHON" "$CHECK" "$@" 2>&1)"
  rc=$?
  if [[ $rc -ne $want_rc ]]; then
    echo "FAIL $name: exit $rc, want $want_rc; output:"; echo "$out"; failures=$((failures + 1)); return
  fi
  if [[ -n "$pattern" ]] && ! grep -qF -- "$pattern" <<<"$out"; then
    echo "FAIL $name: no '$pattern' in:"; echo "$out"; failures=$((failures + 1)); return
  fi
  echo "ok   $name"
}

cat >"$WORK/layout.json" <<'JSON'
{"parts": {"Outer": {"is": ["x/"]}, "Inner": {"is": ["x/y/"]}, "Io": {"is": ["io/"]},
           "Low": {"is": ["low/"]}},
 "never": [["Outer", "Inner", "outer knows no inner"], ["Low", "Io", "low reads no files"],
           ["Low", "Outer", "low knows no outer"]]}
JSON
L=(--layout "$WORK/layout.json")

query "$WORK/clean.xml" \
  "$(rule cc_library //x/y:inner -- //x:outer //low:base @ext//:lib //third_party:absl)" \
  "$(rule cc_library //x:outer -- //x:other //low:base)" \
  "$(rule cc_library //low:base -- //x/y:inner //xz:not_outer)"
expect "allowed edges pass (inner->outer, ->low, external, same part)" 0 "0 broken edge(s)" -- "${L[@]}" "$WORK/clean.xml"

query "$WORK/outer_inner.xml" "$(rule cc_binary //x:tool -- //low:base //x/y/z:deep)"
expect "a never breaks through a subpackage (longest prefix)" 1 \
  "never [Outer, Inner] (outer knows no inner): //x:tool [cc_binary] -> //x/y/z:deep (deps)" -- "${L[@]}" "$WORK/outer_inner.xml"

query "$WORK/prod_io.xml" "$(rule cc_library //low:reader -- //io:npy)"
expect "a library may not use Io where a never forbids it" 1 "//low:reader [cc_library] -> //io:npy" -- "${L[@]}" "$WORK/prod_io.xml"

query "$WORK/test_io.xml" \
  "$(rule cc_test //low:reader_test -- //io:npy //low:base)" \
  "$(rule cc_library //low:fixture testonly -- //io:npy)" \
  "$(rule sh_test //low:script_test -- //io:data.txt)"
expect "tests and testonly targets may use Io" 0 "0 broken edge(s)" -- "${L[@]}" "$WORK/test_io.xml"

query "$WORK/test_outer.xml" "$(rule cc_test //low:base_test -- //io:npy //x:outer)"
expect "a test breaking another never fails" 1 "//low:base_test [cc_test (test code)] -> //x:outer" -- "${L[@]}" "$WORK/test_outer.xml"

echo "//low:base_test -> //x:outer  # reads a file format that lives in x" >"$WORK/exceptions.txt"
echo "//low:gone_test -> //x:outer  # no longer there" >>"$WORK/exceptions.txt"
expect "a listed test exception passes, a stale one warns" 0 "matches no edge" -- "${L[@]}" --test_exceptions "$WORK/exceptions.txt" "$WORK/test_outer.xml"

query "$WORK/prod_outer.xml" "$(rule cc_library //low:base -- //x:outer)"
echo "//low:base -> //x:outer  # exceptions are for test code only" >"$WORK/prod_exception.txt"
expect "an exception does not cover a library" 1 "//low:base [cc_library] -> //x:outer" -- "${L[@]}" --test_exceptions "$WORK/prod_exception.txt" "$WORK/prod_outer.xml"

echo "//low:base_test -> //x:outer" >"$WORK/no_reason.txt"
expect "an exception without a reason is refused" 2 "want" -- "${L[@]}" --test_exceptions "$WORK/no_reason.txt" "$WORK/test_outer.xml"

echo '{"parts": {"A": {"is": ["a/"]}}, "never": [["A", "B", "no such part"]]}' >"$WORK/bad_layout.json"
expect "a never naming no part is refused" 2 "names no part 'B'" -- --layout "$WORK/bad_layout.json" "$WORK/clean.xml"

cat >"$WORK/copy.json" <<'JSON'
{"parts": {"Outer": {"is": ["x/"]}, "Inner": {"is": ["x/y/"]}, "Io": {"is": ["io/"]},
           "Low": {"is": ["low/"]}}, "never": [["Outer", "Inner", "outer knows no inner"]]}
JSON
expect "a copy that differs from the layout warns" 0 "differs from" -- "${L[@]}" --copy "$WORK/copy.json" "$WORK/clean.xml"

# Arrows: with them in the layout, an edge between parts that no arrow
# draws fails for a library, not for test code.
cat >"$WORK/arrows.json" <<'JSON'
{"parts": {"Outer": {"is": ["x/"]}, "Inner": {"is": ["x/y/"]}, "Io": {"is": ["io/"]},
           "Low": {"is": ["low/"]}},
 "arrows": [["Inner", "Outer"], ["Inner", "Low"], ["Outer", "Low"], ["Low", "Inner"]],
 "never": [["Outer", "Inner", "outer knows no inner"]]}
JSON
expect "drawn arrows pass" 0 "0 broken edge(s)" -- --layout "$WORK/arrows.json" "$WORK/clean.xml"
query "$WORK/undrawn.xml" \
  "$(rule cc_library //low:base -- //x:outer)" \
  "$(rule cc_test //low:base_test -- //x:outer //io:npy)"
expect "an undrawn edge of a library fails, a test's passes" 1 \
  "undrawn [Low, Outer] (no arrow on the whiteboard): //low:base [cc_library] -> //x:outer (deps)" -- --layout "$WORK/arrows.json" "$WORK/undrawn.xml"
expect "one undrawn edge" 1 "1 broken edge(s)" -- --layout "$WORK/arrows.json" "$WORK/undrawn.xml"

# The committed copy: its nevers are the ones CI enforces.
query "$WORK/repo.xml" \
  "$(rule cc_binary //bench/service_overhead:engine_direct -- //engine/runtime:devices //server:backends)" \
  "$(rule cc_library //engine/models:cuda_x -- //engine/runtime:device_arena)" \
  "$(rule cc_library //engine/pipeline:plda -- //engine/io:npz)" \
  "$(rule cc_test //engine/pipeline:plda_test -- //engine/io:npz //testing:kaldi)"
expect "copy: Bench -> Server fails" 1 "never [Bench, Server]" -- --layout "$COPY" "$WORK/repo.xml"
expect "copy: Models -> Runtime fails" 1 "never [Models, Runtime]" -- --layout "$COPY" "$WORK/repo.xml"
expect "copy: Pipeline -> Io fails for a library" 1 "never [Pipeline, Io]" -- --layout "$COPY" "$WORK/repo.xml"
expect "copy: three broken edges, the test's are allowed" 1 "3 broken edge(s)" -- --layout "$COPY" "$WORK/repo.xml"

if [[ $failures -ne 0 ]]; then
  echo "$failures case(s) failed"
  exit 1
fi
echo "all cases passed"
