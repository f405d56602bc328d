// numpy's legacy `np.random.RandomState(seed)` for an integer seed: the
// MT19937 generator and the few draws scikit-learn's k-means++ makes from it
// (random_sample, uniform, choice with probabilities). Bit-identical to
// numpy 1.17+ (numpy/random/src/mt19937, numpy/random/mtrand.pyx, unchanged
// since; checked against numpy 2.4.6 by kmeans_sklearn_parity_test).
#ifndef DIARIZATION_ENGINE_PIPELINE_KMEANS_RANDOM_STATE_H_
#define DIARIZATION_ENGINE_PIPELINE_KMEANS_RANDOM_STATE_H_

#include <array>
#include <cstdint>
#include <span>

namespace diarization::pipeline {

class NumpyRandomState {
 public:
  // RandomState(seed) with an int seed: numpy's _legacy_seeding calls
  // mt19937_seed (Matsumoto's init_genrand), not init_by_array.
  explicit NumpyRandomState(uint32_t seed);

  // mt19937_next: one tempered 32-bit output.
  uint32_t NextUint32();
  // random_sample() / uniform(0, 1): 53-bit double from two outputs,
  // (a >> 5) · 2^26 + (b >> 6), over 2^53.
  double RandomSample();
  // choice(len(p), p=p) with replace=True and size=None: cdf = cumsum(p)
  // in float64, cdf /= cdf[-1], one random_sample, searchsorted side=right.
  // `p` is what numpy holds after converting to float64.
  int Choice(std::span<const double> p);

 private:
  void Generate();
  std::array<uint32_t, 624> key_;
  int pos_;
};

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_KMEANS_RANDOM_STATE_H_
