// Parity of the CPU networks with pyannote.audio's own modules.
//
// engine/models/testdata/reference_random_seed<N>.{safetensors,json} hold
// the outputs of pyannote's PyanNet and WeSpeakerResNet34 (torchaudio's
// fbank included), loaded with the random weights of
// `make_random_models --seed N`, on 10 s windows of real speech
// (tools/reference/record.py). This test rebuilds the same model directory,
// checks its hashes against the recording, runs the CPU backend on the same
// windows and masks, and compares.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/models/cpu/cpu_backend.h"
#include "engine/models/fbank.h"
#include "engine/models/format/manifest.h"
#include "engine/models/format/model_dir.h"
#include "engine/models/format/random_model.h"
#include "engine/models/format/safetensors.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "testing/reference_networks.h"
#include "testing/test_data.h"
#include "testing/wav.h"

namespace diarization::models {
namespace {

constexpr char kReference[] = "reference_random_seed1";

class CpuParityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string base = diarization::testing::SourceRoot() +
                             "/engine/models/testdata/" + kReference;
    std::ifstream in(base + ".json");
    ASSERT_TRUE(in) << "missing " << base << ".json";
    std::stringstream text;
    text << in.rdbuf();
    info_ = new nlohmann::json(nlohmann::json::parse(text.str()));
    auto ref = SafetensorsFile::Open(base + ".safetensors");
    ASSERT_TRUE(ref.ok()) << ref.status();
    reference_ = ref->release();

    // The same random weights pyannote was given.
    const char* tmp = std::getenv("TEST_TMPDIR");
    const std::string dir = absl::StrCat(tmp ? tmp : "/tmp", "/parity_models");
    model_dir_path_ = dir;
    const uint64_t seed = (*info_)["seed"].get<uint64_t>();
    ASSERT_TRUE(
        MakeRandomModelDirectory(
            dir, seed,
            diarization::testing::SharedModelsDir() + "/community-1-plda")
            .ok());
    for (const char* file :
         {"segmentation.safetensors", "embedding.safetensors"}) {
      auto sha = Sha256HexOfFile(dir + "/" + file);
      ASSERT_TRUE(sha.ok()) << sha.status();
      ASSERT_EQ(*sha, (*info_)["models"][file].get<std::string>())
          << file
          << " differs from the weights the reference was recorded with";
    }
    auto model_dir = ModelDirectory::Open(dir);
    ASSERT_TRUE(model_dir.ok()) << model_dir.status();
    auto backend = CreateCpuBackend(**model_dir, {.threads = 2});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = new CpuBackend(std::move(*backend));

    windows_ = new std::vector<float>();
    for (const auto& w : (*info_)["windows"]) {
      auto wav = testing::ReadWavOrDie(w["audio"].get<std::string>());
      const size_t start = w["offset_samples"].get<size_t>();
      ASSERT_LE(start + kWindowSamples, wav.size());
      windows_->insert(windows_->end(), wav.begin() + start,
                       wav.begin() + start + kWindowSamples);
    }
  }

  std::span<const float> Ref(const std::string& name, size_t expected) {
    const TensorView* t = reference_->Find(name);
    EXPECT_NE(t, nullptr) << name;
    if (t == nullptr) return {};
    EXPECT_EQ(static_cast<size_t>(t->num_elements()), expected) << name;
    return t->f32();
  }
  int num_windows() const {
    return static_cast<int>((*info_)["windows"].size());
  }

  static inline nlohmann::json* info_ = nullptr;
  static inline SafetensorsFile* reference_ = nullptr;
  static inline CpuBackend* backend_ = nullptr;
  static inline std::vector<float>* windows_ = nullptr;
  static inline std::string model_dir_path_;
};

// torchaudio's float32 fbank carries the rounding of its float32 FFT (MKL
// or pocketfft), which cannot be reproduced bit for bit. In mel bands 80+ dB
// below a frame's loudest band that rounding reaches ~5e-4 in log units,
// so an element-wise 1e-5 bound holds only where torchaudio's own FFT
// rounding is below it. The reference with torchaudio's float32 time-domain
// steps and an exact DFT (testing::ReferenceFbank, kTorchFloat32) measures
// that rounding; the criterion is: |ours − torchaudio| ≤ 1e-5 + |torchaudio −
// exact-DFT reference| element-wise, and |ours − that reference| ≤ 1e-5.
TEST_F(CpuParityTest, FbankMatchesTorchaudio) {
  const int b = num_windows();
  auto ref = Ref("embedding.fbank", b * 998 * 80);
  auto fbank = Fbank::Create();
  ASSERT_TRUE(fbank.ok());
  for (int i = 0; i < b; ++i) {
    auto window = std::span<const float>(*windows_).subspan(i * kWindowSamples,
                                                            kWindowSamples);
    std::vector<float> out(998 * 80);
    ASSERT_TRUE((*fbank)->Compute(window, out).ok());
    const std::vector<double> exact_dft = testing::ReferenceFbank(
        window, testing::FbankTimeDomain::kTorchFloat32, (*fbank)->window());
    double max_abs = 0.0, ours_vs_exact = 0.0, torch_vs_exact = 0.0;
    int over_1e5 = 0, unexplained = 0;
    for (int j = 0; j < 998 * 80; ++j) {
      const double torch = ref[i * 998 * 80 + j];
      const double diff = std::abs(out[j] - torch);
      const double torch_err = std::abs(torch - exact_dft[j]);
      max_abs = std::max(max_abs, diff);
      ours_vs_exact = std::max(ours_vs_exact, std::abs(out[j] - exact_dft[j]));
      torch_vs_exact = std::max(torch_vs_exact, torch_err);
      over_1e5 += diff > 1e-5;
      unexplained += diff > 1e-5 + torch_err;
    }
    std::cerr << "fbank window " << i << ": max abs vs torchaudio " << max_abs
              << " (" << over_1e5 << " of 79840 elements > 1e-5); vs exact-DFT "
              << "reference: ours " << ours_vs_exact << ", torchaudio "
              << torch_vs_exact << "\n";
    EXPECT_EQ(unexplained, 0) << "window " << i;
    EXPECT_LE(ours_vs_exact, 1e-5) << "window " << i;
  }
}

// A float32 PyanNet is ill-conditioned on some windows: a SincNet channel
// with almost no energy (variance below InstanceNorm's eps) amplifies the
// convolution's rounding ~300×, and the LSTMs carry it on. pyannote's own
// float32 output then differs from its float64 output by up to 0.76 (window
// 0 of this recording with these weights). The criteria: the hard powerset
// decision (what the pipeline uses) is identical on every frame; and either
// |ours − pyannote| ≤ 1e-4, or ours is no further from the float64
// reference than pyannote's own float32 output is (times 1.5).
TEST_F(CpuParityTest, SegmentationMatchesPyanNet) {
  const int b = num_windows();
  auto ref = Ref("segmentation.log_probs", b * kFramesPerWindow * 7);
  std::vector<float> out(b * kFramesPerWindow * 7);
  ASSERT_TRUE(backend_->segmentation->Run(*windows_, b, out).ok());
  auto weights =
      SafetensorsFile::Open(model_dir_path_ + "/segmentation.safetensors");
  ASSERT_TRUE(weights.ok());
  for (int i = 0; i < b; ++i) {
    const std::vector<double> exact = testing::ReferencePyanNet(
        **weights, windows_->data() + static_cast<size_t>(i) * kWindowSamples);
    double max_abs = 0.0, ours_err = 0.0, pyannote_err = 0.0;
    int argmax_flips = 0;
    for (int t = 0; t < kFramesPerWindow; ++t) {
      const size_t base =
          (static_cast<size_t>(i) * kFramesPerWindow + t) * 7;
      int ao = 0, ar = 0;
      for (int c = 0; c < 7; ++c) {
        max_abs =
            std::max(max_abs, std::abs(double(out[base + c]) - ref[base + c]));
        ours_err =
            std::max(ours_err, std::abs(out[base + c] - exact[t * 7 + c]));
        pyannote_err =
            std::max(pyannote_err, std::abs(ref[base + c] - exact[t * 7 + c]));
        if (out[base + c] > out[base + ao]) ao = c;
        if (ref[base + c] > ref[base + ar]) ar = c;
      }
      argmax_flips += ao != ar;
    }
    std::cerr << "segmentation window " << i << ": max abs vs pyannote "
              << max_abs << "; vs float64 reference: ours " << ours_err
              << ", pyannote " << pyannote_err
              << "; powerset argmax differences " << argmax_flips << "\n";
    EXPECT_EQ(argmax_flips, 0) << "window " << i;
    EXPECT_TRUE(max_abs <= 1e-4 || ours_err <= 1.5 * pyannote_err)
        << "window " << i << ": " << max_abs << " from pyannote, " << ours_err
        << " from float64 (pyannote " << pyannote_err << ")";
  }
}

TEST_F(CpuParityTest, EmbeddingsMatchWeSpeakerResNet34) {
  const int b = num_windows();
  const int m = static_cast<int>((*info_)["mask_names"].size());
  auto masks = Ref("embedding.masks", b * m * kFramesPerWindow);
  auto per_mask = Ref("embedding.per_mask", b * m * kEmbeddingDim);
  auto multi = Ref("embedding.multi_mask", b * m * kEmbeddingDim);
  std::vector<float> out(b * m * kEmbeddingDim);
  ASSERT_TRUE(backend_->embedding->Run(*windows_, b, masks, m, out).ok());
  double worst = 0.0, worst_multi = 0.0;
  for (int i = 0; i < b * m; ++i) {
    double num = 0, num_multi = 0, den = 0;
    for (int d = 0; d < kEmbeddingDim; ++d) {
      const double o = out[i * kEmbeddingDim + d];
      const double r = per_mask[i * kEmbeddingDim + d];
      num += (o - r) * (o - r);
      num_multi += (o - multi[i * kEmbeddingDim + d]) *
                   (o - multi[i * kEmbeddingDim + d]);
      den += r * r;
    }
    const double rel = std::sqrt(num / den);
    std::cerr << "embedding window " << i / m << " mask "
              << (*info_)["mask_names"][i % m].get<std::string>() << ": rel L2 "
              << rel << "\n";
    worst = std::max(worst, rel);
    worst_multi = std::max(worst_multi, std::sqrt(num_multi / den));
  }
  std::cerr << "embeddings: worst rel L2 vs per-mask runs " << worst
            << ", vs pyannote's multi-mask path " << worst_multi << "\n";
  EXPECT_LE(worst, 1e-4);
  EXPECT_LE(worst_multi, 1e-4);
}

}  // namespace
}  // namespace diarization::models
