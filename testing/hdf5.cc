#include "testing/hdf5.h"

#include <hdf5.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace diarization::testing {

absl::StatusOr<Hdf5Dataset> ReadHdf5Dataset(const std::string& path,
                                            const std::string& name) {
  // libhdf5 prints its own error stack by default; errors come back here.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0)
    return absl::NotFoundError(absl::StrCat("cannot open HDF5 file ", path));
  Hdf5Dataset out;
  absl::Status status = absl::OkStatus();
  const hid_t set = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  if (set < 0) {
    status =
        absl::NotFoundError(absl::StrCat(path, " has no dataset '", name, "'"));
  } else {
    const hid_t space = H5Dget_space(set);
    const int rank = H5Sget_simple_extent_ndims(space);
    std::vector<hsize_t> dims(rank > 0 ? rank : 0);
    if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    int64_t n = 1;
    for (hsize_t d : dims) {
      out.shape.push_back(static_cast<int64_t>(d));
      n *= static_cast<int64_t>(d);
    }
    out.values.resize(n);
    // The library converts any stored float/int type to native double.
    if (H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                out.values.data()) < 0) {
      status = absl::InvalidArgumentError(
          absl::StrCat(path, ":", name, " cannot be read as numbers"));
    }
    H5Sclose(space);
    H5Dclose(set);
  }
  H5Fclose(file);
  if (!status.ok()) return status;
  return out;
}

}  // namespace diarization::testing
