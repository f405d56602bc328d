#include "engine/io/plda_files.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/sha256.h"
#include "engine/common/status_macros.h"
#include "engine/io/npy.h"

namespace diarization::io {
namespace {

absl::StatusOr<std::vector<double>> Member(
    const std::map<std::string, NpyArray>& npz, const std::string& path,
    const std::string& key, std::vector<int64_t> shape) {
  auto it = npz.find(key);
  if (it == npz.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " has no '", key, "'"));
  }
  if (it->second.shape != shape) {
    std::string got;
    for (int64_t s : it->second.shape) absl::StrAppend(&got, s, ",");
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", key, " has shape (", got, ") , expected ",
                     shape.size(), "-d of ", shape.empty() ? 0 : shape[0]));
  }
  return it->second.ToDouble();
}

absl::StatusOr<std::string> FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

}  // namespace

absl::StatusOr<pipeline::PldaModel> LoadPlda(const std::string& dir) {
  const std::string xvec_path = dir + "/xvec_transform.npz";
  const std::string plda_path = dir + "/plda.npz";
  ASSIGN_OR_RETURN(const auto xvec, ReadNpzFile(xvec_path));
  ASSIGN_OR_RETURN(const auto plda, ReadNpzFile(plda_path));
  auto lda_it = xvec.find("lda");
  if (lda_it == xvec.end() || lda_it->second.shape.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(xvec_path, " has no 2-d 'lda'"));
  }
  const int64_t in = lda_it->second.shape[0], out = lda_it->second.shape[1];
  ASSIGN_OR_RETURN(auto mean1, Member(xvec, xvec_path, "mean1", {in}));
  ASSIGN_OR_RETURN(auto mean2, Member(xvec, xvec_path, "mean2", {out}));
  ASSIGN_OR_RETURN(auto lda, Member(xvec, xvec_path, "lda", {in, out}));
  ASSIGN_OR_RETURN(auto mu, Member(plda, plda_path, "mu", {out}));
  ASSIGN_OR_RETURN(auto tr, Member(plda, plda_path, "tr", {out, out}));
  ASSIGN_OR_RETURN(auto psi, Member(plda, plda_path, "psi", {out}));
  std::vector<double> reference;
  const std::string eig_path = dir + "/eigenvectors_desc.bin";
  if (std::filesystem::exists(eig_path)) {
    ASSIGN_OR_RETURN(const std::string bytes, FileBytes(eig_path));
    if (bytes.size() != static_cast<size_t>(out * out) * sizeof(double)) {
      return absl::InvalidArgumentError(absl::StrCat(
          eig_path, " has ", bytes.size(), " bytes, expected ", out * out * 8));
    }
    reference.resize(out * out);
    std::memcpy(reference.data(), bytes.data(), bytes.size());
  }
  ASSIGN_OR_RETURN(
      pipeline::PldaModel model,
      pipeline::BuildPlda(std::move(mean1), std::move(mean2), std::move(lda),
                          std::move(mu), tr, psi, reference));
  ASSIGN_OR_RETURN(const std::string xvec_bytes, FileBytes(xvec_path));
  ASSIGN_OR_RETURN(const std::string plda_bytes, FileBytes(plda_path));
  model.sha256 = Sha256Hex(xvec_bytes + plda_bytes);
  return model;
}

}  // namespace diarization::io
