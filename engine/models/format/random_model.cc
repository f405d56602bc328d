#include "engine/models/format/random_model.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <numbers>
#include <random>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/models/format/model_dir.h"
#include "engine/models/format/model_specs.h"

namespace diarization::models {
namespace {

// One stream per tensor, so adding a tensor never changes the others.
class Stream {
 public:
  Stream(uint64_t seed, const std::string& name) : engine_(Mix(seed, name)) {}

  // Uniform in [0, 1) with 53 random bits.
  double Uniform01() {
    return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
  }
  float Uniform(double lo, double hi) {
    return static_cast<float>(lo + (hi - lo) * Uniform01());
  }
  // Box-Muller; one value per call (the sine half is dropped for clarity).
  float Normal(double mean, double stddev) {
    const double u1 = 1.0 - Uniform01();  // (0, 1]: log is finite.
    const double u2 = Uniform01();
    const double z =
        std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    return static_cast<float>(mean + stddev * z);
  }

 private:
  static uint64_t Mix(uint64_t seed, const std::string& name) {
    uint64_t h = 1469598103934665603ull ^ seed;  // FNV-1a over the name.
    for (unsigned char c : name) {
      h ^= c;
      h *= 1099511628211ull;
    }
    return h;
  }
  std::mt19937_64 engine_;
};

TensorData MakeF32(const TensorSpec& spec, const std::vector<float>& values) {
  TensorData t;
  t.spec = spec;
  t.bytes.resize(values.size() * sizeof(float));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

int64_t NumElements(const TensorSpec& spec) {
  int64_t n = 1;
  for (int64_t d : spec.shape) n *= d;
  return n;
}

// fan_in of a conv/linear weight: every dimension but the first.
double FanIn(const TensorSpec& spec) {
  double fan_in = 1;
  for (size_t i = 1; i < spec.shape.size(); ++i) fan_in *= spec.shape[i];
  return fan_in;
}

std::vector<float> Fill(Stream& s, int64_t n, auto draw) {
  std::vector<float> v(n);
  for (float& x : v) x = draw(s);
  return v;
}

// At PyTorch's default scales an untrained PyanNet is nearly uniform: on
// real audio every frame's log-probabilities are within 0.005 of log(1/7),
// and only 2 of the 7 classes ever win, which would leave the powerset
// decoding untested and make argmax a coin toss at float rounding. LSTM and
// linear bounds ×4 and the classifier ×8 give a mean top probability of 0.72
// with 6 classes winning (measured with pyannote's PyanNet on the findit
// clip, 2 windows).
constexpr double kRecurrentGain = 4.0;
constexpr double kClassifierGain = 8.0;

double HzToMel(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }
double MelToHz(double mel) {
  return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
}

// asteroid ParamSincFB._init: low edges and widths of 40 mel-spaced bands
// between 30 Hz and fs/2 - (min_low_hz + min_band_hz).
void SincInit(std::vector<double>& low, std::vector<double>& band) {
  constexpr int kBands = PyanNetHyperParameters::kSincBands;
  const double lo = HzToMel(30.0);
  const double hi =
      HzToMel(kSampleRateHz / 2 - (PyanNetHyperParameters::kSincMinLowHz +
                                   PyanNetHyperParameters::kSincMinBandHz));
  std::vector<double> hz(kBands + 1);
  for (int i = 0; i <= kBands; ++i) {
    hz[i] = MelToHz(lo + (hi - lo) * i / kBands);
  }
  low.assign(hz.begin(), hz.end() - 1);
  band.resize(kBands);
  for (int i = 0; i < kBands; ++i) band[i] = hz[i + 1] - hz[i];
}

}  // namespace

std::vector<float> SincWindowBuffer() {
  // numpy.hamming(M): n = arange(1-M, M, 2); 0.54 + 0.46*cos(pi*n/(M-1)),
  // in float64, then .float().
  constexpr int kM = PyanNetHyperParameters::kSincKernel;
  std::vector<float> w(PyanNetHyperParameters::kSincHalfKernel);
  for (int j = 0; j < static_cast<int>(w.size()); ++j) {
    const double n = 1 - kM + 2 * j;
    w[j] = static_cast<float>(0.54 +
                              0.46 * std::cos(std::numbers::pi * n / (kM - 1)));
  }
  return w;
}

std::vector<float> SincTimeBuffer() {
  // 2 * np.pi * (torch.arange(-125, 0.0) / 16000): float32 division, then a
  // float32 multiply by float32(2π).
  constexpr int kHalf = PyanNetHyperParameters::kSincHalfKernel;
  const float two_pi = static_cast<float>(2.0 * std::numbers::pi);
  std::vector<float> n(kHalf);
  for (int j = 0; j < kHalf; ++j) {
    const float t =
        static_cast<float>(j - kHalf) / static_cast<float>(kSampleRateHz);
    n[j] = two_pi * t;
  }
  return n;
}

std::vector<TensorData> RandomPyanNetTensors(uint64_t seed) {
  std::vector<double> init_low, init_band;
  SincInit(init_low, init_band);
  std::vector<TensorData> out;
  for (const TensorSpec& spec : PyanNetTensorSpecs()) {
    Stream s(seed, spec.name);
    const std::string& name = spec.name;
    const int64_t n = NumElements(spec);
    std::vector<float> v;
    if (absl::EndsWith(name, "filterbank.window_")) {
      v = SincWindowBuffer();
    } else if (absl::EndsWith(name, "filterbank.n_")) {
      v = SincTimeBuffer();
    } else if (absl::EndsWith(name, "filterbank.low_hz_")) {
      for (double hz : init_low) v.push_back(s.Uniform(0.9 * hz, 1.1 * hz));
    } else if (absl::EndsWith(name, "filterbank.band_hz_")) {
      for (double hz : init_band) v.push_back(s.Uniform(0.9 * hz, 1.1 * hz));
    } else if (absl::StartsWith(name, "sincnet.wav_norm1d.") ||
               absl::StartsWith(name, "sincnet.norm1d.")) {
      v = absl::EndsWith(name, ".weight")
              ? Fill(s, n, [](Stream& r) { return r.Uniform(0.8, 1.2); })
              : Fill(s, n, [](Stream& r) { return r.Normal(0.0, 0.1); });
    } else if (absl::StartsWith(name, "lstm.")) {
      const double bound =
          kRecurrentGain / std::sqrt(PyanNetHyperParameters::kLstmHidden);
      v = Fill(s, n, [&](Stream& r) { return r.Uniform(-bound, bound); });
    } else {
      // Conv1d / Linear weight and bias: PyTorch's default U(±1/sqrt(fan_in))
      // where a bias uses its weight's fan_in.
      std::string weight_name = name;
      if (absl::EndsWith(name, ".bias")) {
        weight_name = name.substr(0, name.size() - 5) + ".weight";
      }
      double fan_in = 0;
      for (const TensorSpec& w : PyanNetTensorSpecs()) {
        if (w.name == weight_name) fan_in = FanIn(w);
      }
      double gain = 1.0;  // sincnet.conv1d.{1,2}: InstanceNorm follows.
      if (absl::StartsWith(name, "linear.")) gain = kRecurrentGain;
      if (absl::StartsWith(name, "classifier.")) gain = kClassifierGain;
      const double bound = gain / std::sqrt(fan_in);
      v = Fill(s, n, [&](Stream& r) { return r.Uniform(-bound, bound); });
    }
    out.push_back(MakeF32(spec, v));
  }
  return out;
}

std::vector<TensorData> RandomResNet34Tensors(uint64_t seed) {
  std::vector<TensorData> out;
  for (const TensorSpec& spec : ResNet34TensorSpecs()) {
    Stream s(seed, spec.name);
    const std::string& name = spec.name;
    const int64_t n = NumElements(spec);
    if (spec.dtype == DType::kI64) {  // num_batches_tracked.
      TensorData t;
      t.spec = spec;
      const int64_t value = 100000;
      t.bytes.resize(sizeof(value));
      std::memcpy(t.bytes.data(), &value, sizeof(value));
      out.push_back(std::move(t));
      continue;
    }
    std::vector<float> v;
    if (absl::EndsWith(name, ".running_mean")) {
      v = Fill(s, n, [](Stream& r) { return r.Normal(0.0, 0.1); });
    } else if (absl::EndsWith(name, ".running_var")) {
      v = Fill(s, n, [](Stream& r) { return r.Uniform(0.5, 2.0); });
    } else if (spec.shape.size() == 4) {  // Conv2d weight (no bias).
      const double stddev = 1.0 / std::sqrt(FanIn(spec));
      v = Fill(s, n, [&](Stream& r) { return r.Normal(0.0, stddev); });
    } else if (absl::StartsWith(name, "resnet.seg_1.")) {
      const double bound = 1.0 / std::sqrt(ResNet34HyperParameters::kStatsDim);
      v = Fill(s, n, [&](Stream& r) { return r.Uniform(-bound, bound); });
    } else if (absl::EndsWith(name, ".weight")) {  // BatchNorm gamma.
      // The last BN of a residual branch is small in trained ResNets; this
      // also keeps activations from growing block after block.
      const bool residual_end = absl::EndsWith(name, ".bn2.weight");
      v = Fill(s, n, [&](Stream& r) {
        return residual_end ? r.Uniform(0.3, 0.6) : r.Uniform(0.8, 1.2);
      });
    } else {  // BatchNorm beta.
      v = Fill(s, n, [](Stream& r) { return r.Normal(0.0, 0.1); });
    }
    out.push_back(MakeF32(spec, v));
  }
  return out;
}

namespace {

// A random model directory's contents; the segmentation's tensors are set
// by the caller.
ModelDirectoryContents RandomContents(uint64_t seed,
                                      const std::string& plda_from) {
  ModelDirectoryContents c;
  c.embedding = RandomResNet34Tensors(seed);
  c.plda_source_dir = plda_from;
  const std::string random_source =
      absl::StrCat("deterministic random test weights (seed ", seed,
                   "), NOT a trained model; made by tools/make_random_models");
  c.segmentation_info.name = "random PyanNet (segmentation-3.0 architecture)";
  c.segmentation_info.architecture = kSegmentationArchitecture;
  c.segmentation_info.precision = "fp32";
  c.segmentation_info.random_weights = true;
  c.segmentation_info.source = random_source;
  c.embedding_info.name =
      "random WeSpeakerResNet34 (wespeaker-voxceleb-resnet34-LM architecture)";
  c.embedding_info.architecture = kEmbeddingArchitecture;
  c.embedding_info.precision = "fp32";
  c.embedding_info.random_weights = true;
  c.embedding_info.source = random_source;
  c.plda_info.name = "pyannote/speaker-diarization-community-1 plda";
  c.plda_info.architecture = kPldaArchitecture;
  c.plda_info.random_weights = false;
  c.plda_info.source =
      "pyannote/speaker-diarization-community-1 plda/xvec_transform.npz and "
      "plda/plda.npz, copied unchanged (CC-BY-4.0; PLDA by BUT Speech@FIT, "
      "VBx integration in pyannote.audio by Jiangyu Han and Petr Palka)";
  return c;
}

}  // namespace

absl::Status MakeRandomModelDirectory(const std::string& out_dir, uint64_t seed,
                                      const std::string& plda_from) {
  ModelDirectoryContents c = RandomContents(seed, plda_from);
  c.segmentation = RandomPyanNetTensors(seed);
  return WriteModelDirectory(out_dir, c);
}

absl::Status MakeRandomModelDirectoryWithSegmentation(
    const std::string& out_dir, uint64_t seed, const std::string& plda_from,
    const std::string& segmentation_from) {
  ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file,
                   SafetensorsFile::Open(segmentation_from));
  if (absl::Status v = file->Validate(PyanNetTensorSpecs()); !v.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(segmentation_from, " does not hold PyanNet's tensors (",
                     v.message(), ")"));
  }
  ModelDirectoryContents c = RandomContents(seed, plda_from);
  for (const TensorSpec& spec : PyanNetTensorSpecs()) {
    const TensorView* view = file->Find(spec.name);
    c.segmentation.push_back(
        {spec, std::vector<std::byte>(view->bytes.begin(), view->bytes.end())});
  }
  c.segmentation_info.name = "PyanNet (segmentation-3.0 architecture)";
  c.segmentation_info.random_weights = false;
  c.segmentation_info.source =
      absl::StrCat("copied from ", segmentation_from,
                   " by tools/make_random_models --segmentation_from");
  return WriteModelDirectory(out_dir, c);
}

}  // namespace diarization::models
