#include "testing/kaldi.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"

namespace diarization::testing {
namespace {

class Reader {
 public:
  explicit Reader(std::string data) : data_(std::move(data)) {}
  bool done() const { return pos_ >= data_.size(); }
  size_t pos() const { return pos_; }

  absl::Status Expect(const std::string& token) {
    if (data_.compare(pos_, token.size(), token) != 0) {
      return Error(absl::StrCat("expected '", token, "'"));
    }
    pos_ += token.size();
    return absl::OkStatus();
  }
  absl::StatusOr<int32_t> Int32() {
    if (pos_ + 5 > data_.size() || data_[pos_] != '\4')
      return Error("expected an int32");
    int32_t v;
    std::memcpy(&v, data_.data() + pos_ + 1, 4);
    pos_ += 5;
    return v;
  }
  // "FV "/"DV " + size + values.
  absl::StatusOr<std::vector<double>> Vector() {
    const std::string type = data_.substr(pos_, 3);
    if (type != "FV " && type != "DV ") return Error("expected FV or DV");
    pos_ += 3;
    ASSIGN_OR_RETURN(const int32_t n, Int32());
    return Values(n, type[0] == 'F');
  }
  // "FM "/"DM " + rows + cols + values (row-major).
  absl::StatusOr<std::vector<double>> Matrix(int* rows, int* cols) {
    const std::string type = data_.substr(pos_, 3);
    if (type != "FM " && type != "DM ") return Error("expected FM or DM");
    pos_ += 3;
    ASSIGN_OR_RETURN(*rows, Int32());
    ASSIGN_OR_RETURN(*cols, Int32());
    return Values(static_cast<int64_t>(*rows) * *cols, type[0] == 'F');
  }
  std::string Token() {  // up to the next space
    const size_t end = data_.find(' ', pos_);
    std::string t = data_.substr(
        pos_, end == std::string::npos ? std::string::npos : end - pos_);
    pos_ = end == std::string::npos ? data_.size() : end + 1;
    return t;
  }

 private:
  absl::StatusOr<std::vector<double>> Values(int64_t n, bool single) {
    const size_t bytes = static_cast<size_t>(n) * (single ? 4 : 8);
    if (n < 0 || pos_ + bytes > data_.size()) return Error("truncated data");
    std::vector<double> out(n);
    for (int64_t i = 0; i < n; ++i) {
      if (single) {
        float f;
        std::memcpy(&f, data_.data() + pos_ + 4 * i, 4);
        out[i] = f;
      } else {
        std::memcpy(&out[i], data_.data() + pos_ + 8 * i, 8);
      }
    }
    pos_ += bytes;
    return out;
  }
  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("kaldi: ", what, " at byte ", pos_));
  }

  std::string data_;
  size_t pos_ = 0;
};

absl::StatusOr<std::string> Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

}  // namespace

absl::StatusOr<std::vector<KaldiVector>> ReadKaldiVectorArk(
    const std::string& path) {
  ASSIGN_OR_RETURN(std::string data, Slurp(path));
  Reader r(std::move(data));
  std::vector<KaldiVector> out;
  while (!r.done()) {
    KaldiVector v;
    v.key = r.Token();
    if (v.key.empty()) break;
    RETURN_IF_ERROR(r.Expect(std::string("\0B", 2)));
    ASSIGN_OR_RETURN(v.values, r.Vector());
    out.push_back(std::move(v));
  }
  return out;
}

absl::StatusOr<KaldiPlda> ReadKaldiPlda(const std::string& path) {
  ASSIGN_OR_RETURN(std::string data, Slurp(path));
  Reader r(std::move(data));
  RETURN_IF_ERROR(r.Expect(std::string("\0B<Plda> ", 9)));
  KaldiPlda plda;
  ASSIGN_OR_RETURN(plda.mean, r.Vector());
  int rows = 0, cols = 0;
  ASSIGN_OR_RETURN(plda.transform, r.Matrix(&rows, &cols));
  ASSIGN_OR_RETURN(plda.psi, r.Vector());
  RETURN_IF_ERROR(r.Expect("</Plda> "));
  plda.dim = static_cast<int>(plda.mean.size());
  if (rows != plda.dim || cols != plda.dim ||
      static_cast<int>(plda.psi.size()) != plda.dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": PLDA sizes disagree (mean ", plda.dim, ", transform ", rows,
        "x", cols, ", psi ", plda.psi.size(), ")"));
  }
  return plda;
}

}  // namespace diarization::testing
