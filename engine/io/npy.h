// Reader for NumPy's .npy arrays and .npz archives (golden fixtures, PLDA).
//
// .npy: magic "\x93NUMPY", version 1.x/2.x/3.x, a Python-dict header with
// 'descr', 'fortran_order' and 'shape', then the raw little-endian data
// (numpy.lib.format). Only little-endian numeric arrays are accepted.
// Fortran-order arrays are reordered to C order on load. Anything else is an
// InvalidArgument naming what was found. .npz is a zip
// of .npy members (stored or deflated), read with libzip.
#ifndef DIARIZATION_ENGINE_IO_NPY_H_
#define DIARIZATION_ENGINE_IO_NPY_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace diarization::io {

enum class NpyDtype {
  kFloat32,
  kFloat64,
  kInt8,
  kUint8,
  kInt16,
  kInt32,
  kInt64,
  kBool
};

struct NpyArray {
  NpyDtype dtype = NpyDtype::kFloat64;
  std::vector<int64_t> shape;  // empty for a 0-d scalar
  std::vector<uint8_t> bytes;  // raw little-endian data, C order

  int64_t size() const;  // number of elements (1 for a scalar)
  // Element-wise conversions (exact for every dtype that fits the target).
  std::vector<double> ToDouble() const;
  std::vector<float> ToFloat() const;
  std::vector<int64_t> ToInt64() const;
};

// Parses the bytes of one .npy file.
absl::StatusOr<NpyArray> ParseNpy(std::string_view data);

absl::StatusOr<NpyArray> ReadNpyFile(const std::string& path);

// Every member of an .npz archive, keyed by its name without ".npy".
absl::StatusOr<std::map<std::string, NpyArray>> ReadNpzFile(
    const std::string& path);

// One member of an .npz archive; NotFound names the key and the archive.
absl::StatusOr<NpyArray> ReadNpzMember(const std::string& path,
                                       const std::string& key);

}  // namespace diarization::io

#endif  // DIARIZATION_ENGINE_IO_NPY_H_
