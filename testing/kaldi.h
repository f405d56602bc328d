// Readers for the Kaldi binary files of BUT's VBx recipe
// (BUTSpeechFIT/VBx): x-vector archives ("key \0B" + FV/DV vector, as
// kaldi_io.read_vec_flt_ark reads them) and the <Plda> model (mean, transform,
// psi, as VBx's kaldi_utils.read_plda). Binary mode only; errors name the
// byte offset.
#ifndef DIARIZATION_TESTING_KALDI_H_
#define DIARIZATION_TESTING_KALDI_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace diarization::testing {

struct KaldiVector {
  std::string key;
  std::vector<double> values;
};

// Every vector of a binary ark, in file order.
absl::StatusOr<std::vector<KaldiVector>> ReadKaldiVectorArk(
    const std::string& path);

struct KaldiPlda {
  std::vector<double> mean;       // (d)
  std::vector<double> transform;  // (d × d) row-major
  std::vector<double> psi;        // (d)
  int dim = 0;
};

absl::StatusOr<KaldiPlda> ReadKaldiPlda(const std::string& path);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_KALDI_H_
