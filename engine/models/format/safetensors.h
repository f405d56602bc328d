// Memory-mapped safetensors files (huggingface/safetensors format).
//
// Layout: 8-byte little-endian header length N, N bytes of JSON header
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
//  "__metadata__": {...}}, then the data. Opening validates the header
// (JSON, dtypes, offsets inside the file, no overlaps, sizes matching shapes)
// and fails with a message naming the file and the problem.
#ifndef DIARIZATION_ENGINE_MODELS_FORMAT_SAFETENSORS_H_
#define DIARIZATION_ENGINE_MODELS_FORMAT_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace diarization::models {

enum class DType { kF32, kF64, kF16, kBF16, kI64, kI32, kI8, kU8, kBool };

// The safetensors spelling ("F32", "I64", "BOOL", ...), the element size in
// bytes, and the inverse of DTypeName (InvalidArgument for other names).
std::string DTypeName(DType dtype);
int64_t DTypeSize(DType dtype);
absl::StatusOr<DType> ParseDType(const std::string& name);

// Read-only view of one tensor inside a mapped file.
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;

  int64_t num_elements() const;
  // The data as float32; empty span when dtype != kF32.
  std::span<const float> f32() const;
};

// What a model expects: a tensor name, dtype and shape.
struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
};

class SafetensorsFile {
 public:
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(
      const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  // Opening fails with NotFound (no such file), DataLoss (truncated or
  // corrupt: bad JSON, bad offsets, overlapping/gapped/trailing data, sizes
  // not matching shapes) or InvalidArgument (not a regular file).

  // nullptr when absent. Views stay valid while this object lives.
  const TensorView* Find(const std::string& name) const;
  // Tensor names, sorted.
  std::vector<std::string> names() const;
  const std::map<std::string, std::string>& metadata() const;
  const std::string& path() const;

  // Checks that the file holds exactly the expected tensors (names, dtypes,
  // shapes). Errors list every missing, unexpected or mismatched tensor.
  // Tensors named in `ignored` (e.g. BatchNorm num_batches_tracked) may be
  // present or absent.
  absl::Status Validate(const std::vector<TensorSpec>& expected,
                        const std::vector<std::string>& ignored = {}) const;

 private:
  SafetensorsFile() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes tensors to a safetensors file (used by the random-model tool and
// tests). Data must match each spec's dtype and shape. The output is a
// deterministic function of the arguments (header keys sorted, data in the
// given order, header padded to 8 bytes); written to `path`.tmp and renamed.
struct TensorData {
  TensorSpec spec;
  std::vector<std::byte> bytes;
};
absl::Status WriteSafetensors(
    const std::string& path, const std::vector<TensorData>& tensors,
    const std::map<std::string, std::string>& metadata);

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_FORMAT_SAFETENSORS_H_
