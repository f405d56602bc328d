// libFuzzer target: SafetensorsFile::Open on arbitrary bytes must return an
// error or a file whose views are in bounds and size-consistent, never crash
// or read outside the mapping (ASan). Built by safetensors_fuzz_test.sh.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "engine/models/format/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path =
      "/dev/shm/safetensors_fuzz_" + std::to_string(::getpid());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  auto file = diarization::models::SafetensorsFile::Open(path);
  if (!file.ok()) return 0;
  uint64_t sum = 0;
  for (const std::string& name : (*file)->names()) {
    const auto* view = (*file)->Find(name);
    if (view == nullptr) __builtin_trap();
    if (static_cast<int64_t>(view->bytes.size()) !=
        view->num_elements() * diarization::models::DTypeSize(view->dtype)) {
      __builtin_trap();
    }
    for (std::byte b : view->bytes) sum += static_cast<uint8_t>(b);
    for (float x : view->f32()) sum += x != 0;
  }
  (void)(*file)->Validate({{"a", diarization::models::DType::kF32, {2}}});
  return static_cast<int>(sum & 0);
}
