#!/usr/bin/env bash
# Builds the safetensors libFuzzer target with clang++-14
# (-fsanitize=fuzzer,address) from the sources given as data deps and fuzzes
# SafetensorsFile::Open for a bounded time from a seed corpus of valid files.
# Fails on any crash, sanitizer report, leak or build error.
set -euo pipefail
FUZZ_SECONDS="${SAFETENSORS_FUZZ_SECONDS:-20}"
SRC="${TEST_SRCDIR:?run under bazel test}/diarization"
WORK="${TEST_TMPDIR:?run under bazel test}/safetensors_fuzz"
mkdir -p "$WORK/corpus"
command -v clang++-14 >/dev/null || {
  echo "FAIL: clang++-14 not found (scripts/install_deps.sh installs it)"; exit 1; }

clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address -I"$SRC" \
  "$SRC/engine/models/format/safetensors_fuzzer.cc" \
  "$SRC/engine/models/format/safetensors.cc" \
  -labsl_status -labsl_statusor -labsl_strings -labsl_strings_internal \
  -labsl_str_format_internal -labsl_cord -labsl_cord_internal \
  -labsl_cordz_info -labsl_cordz_functions -labsl_cordz_handle \
  -labsl_int128 -labsl_raw_logging_internal -labsl_throw_delegate \
  -labsl_base -labsl_spinlock_wait -labsl_strerror -pthread \
  -o "$WORK/fuzzer"

# Seeds: valid files (as the safetensors spec lays them out), one per shape.
seed() {  # seed NAME HEADER_JSON DATA_HEX
  local h="$2" n
  n=${#h}
  { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x\\x00\\x00\\x00\\x00' \
        $((n & 255)) $(((n >> 8) & 255)) $(((n >> 16) & 255)) $(((n >> 24) & 255)))";
    printf '%s' "$h"; printf "$3"; } > "$WORK/corpus/$1"
}
seed f32 '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}' '\x00\x00\x80\x3f\x00\x00\x00\x40'
seed two '{"__metadata__":{"k":"v"},"a":{"dtype":"I64","shape":[],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[1,2],"data_offsets":[8,10]}}' '\x07\x00\x00\x00\x00\x00\x00\x00\x01\x02'
seed empty '{}' ''
seed zero '{"z":{"dtype":"F64","shape":[0,3],"data_offsets":[0,0]}}' ''

"$WORK/fuzzer" -max_total_time="$FUZZ_SECONDS" -max_len=4096 -timeout=10 \
  -rss_limit_mb=2048 "$WORK/corpus"
echo "safetensors_fuzz_test: 1 passed, 0 failed"
