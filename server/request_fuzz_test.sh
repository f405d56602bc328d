#!/usr/bin/env bash
# Builds the request-handling libFuzzer target (server/request_fuzzer.cc)
# with clang++-14 (-fsanitize=fuzzer,address): the Diarize stream's message
# sequencing and validation (StreamSession with a fake job) and the unary
# path up to the engine (validation, header, bounded decode). Runs it for a
# bounded time on the committed corpus (server/fuzz_corpus/request). Fails on
# any crash, sanitizer report, leak, broken invariant or build error.
# Everything is written under $TEST_TMPDIR.
set -euo pipefail

FUZZ_SECONDS="${REQUEST_FUZZ_SECONDS:-30}"
SRC="${TEST_SRCDIR:?run under bazel test}/diarization"
WORK="${TEST_TMPDIR:?run under bazel test}/request_fuzz"
mkdir -p "$WORK/gen" "$WORK/corpus"

for tool in clang++-14 protoc; do
  command -v "$tool" >/dev/null || {
    echo "FAIL: $tool not found (scripts/install_deps.sh installs it)"; exit 1; }
done

echo "== generating the protobuf code"
protoc --proto_path="$SRC/proto" --cpp_out="$WORK/gen" \
  "$SRC/proto/diarization/v1/diarization.proto"

# Every Abseil library Debian ships: the sources use status, strings,
# random, synchronization and time.
ABSL_LIBS=()
for lib in /usr/lib/x86_64-linux-gnu/libabsl_*.so; do
  name="$(basename "$lib" .so)"
  ABSL_LIBS+=("-l${name#lib}")
done

echo "== building the fuzzer"
clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address \
  -I"$SRC" -I"$WORK/gen" \
  "$SRC/server/request_fuzzer.cc" \
  "$SRC/server/stream_session.cc" \
  "$SRC/server/request_validation.cc" \
  "$SRC/server/limits.cc" \
  "$SRC/engine/audio/audio.cc" \
  "$SRC/engine/audio/file_decoder.cc" \
  "$SRC/engine/audio/g711.cc" \
  "$SRC/engine/audio/memory_reader.cc" \
  "$SRC/engine/audio/mp3_decoder.cc" \
  "$SRC/engine/audio/ogg_vorbis_headers.cc" \
  "$SRC/engine/audio/pcm_convert.cc" \
  "$SRC/engine/common/crop_edges.cc" \
  "$SRC/engine/audio/resampler.cc" \
  "$SRC/engine/audio/sndfile_memory.cc" \
  "$WORK/gen/diarization/v1/diarization.pb.cc" \
  -lprotobuf -lsndfile -lmpg123 -lvorbis -logg -Wl,--start-group "${ABSL_LIBS[@]}" \
  -Wl,--end-group -pthread -o "$WORK/request_fuzzer"

# The committed corpus is read-only in the runfiles: fuzz into a copy.
cp "$SRC"/server/fuzz_corpus/request/* "$WORK/corpus/"
ls -la "$WORK/corpus" | head -40

echo "== fuzzing for ${FUZZ_SECONDS} s"
cd "$WORK"
# Every leak fails, libsndfile's on crafted Ogg/Vorbis headers included: the
# decoder refuses those files before libsndfile opens them
# (engine/audio/ogg_vorbis_headers.h).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
  ./request_fuzzer -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 \
  -timeout=20 -max_len=65536 -print_final_stats=1 "$WORK/corpus" \
  2>&1 | tail -n 40
rc=${PIPESTATUS[0]}
if [[ $rc -ne 0 ]]; then
  echo "FAIL: fuzzer exited $rc (crash, sanitizer report, leak or invariant above)"
  exit 1
fi
echo "PASS: no crash, sanitizer report, leak or broken invariant in ${FUZZ_SECONDS} s"
