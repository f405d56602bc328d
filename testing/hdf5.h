// Reads a numeric dataset of an HDF5 file as float64 (libhdf5), e.g. BUT
// VBx's transform.h5 {mean1, mean2, lda}.
#ifndef DIARIZATION_TESTING_HDF5_H_
#define DIARIZATION_TESTING_HDF5_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace diarization::testing {

struct Hdf5Dataset {
  std::vector<int64_t> shape;
  std::vector<double> values;  // C order
};

absl::StatusOr<Hdf5Dataset> ReadHdf5Dataset(const std::string& path,
                                            const std::string& name);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_HDF5_H_
