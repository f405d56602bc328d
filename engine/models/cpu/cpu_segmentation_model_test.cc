// CpuSegmentationModel against an independent float64 PyanNet written with
// plain loops from ../shared/specs/models.md §1, on real speech with
// deterministic random weights. Parity with pyannote's own PyanNet is in
// cpu_parity_test.cc.
#include "engine/models/cpu/cpu_segmentation_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/models/format/safetensors.h"
#include "gtest/gtest.h"
#include "testing/random_weights.h"
#include "testing/reference_networks.h"
#include "testing/wav.h"

namespace diarization::models {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir ? dir : "/tmp", "/", name);
}

class CpuSegmentationModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = TempPath("pyannet_random.safetensors");
    ASSERT_TRUE(testing::WriteRandomPyanNet(path, 1234).ok());
    auto file = SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    file_ = std::move(*file);
    auto model = CpuSegmentationModel::Create(*file_, {.threads = 2});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(*model);
    auto onednn = CpuSegmentationModel::Create(
        *file_, {.threads = 2, .lstm = CpuLstmImpl::kOneDnnPrimitive});
    ASSERT_TRUE(onednn.ok()) << onednn.status();
    model_onednn_ = std::move(*onednn);
    wav_ = testing::ReadWavOrDie("pyannote-audio/sample/sample.wav");
  }
  std::unique_ptr<SafetensorsFile> file_;
  std::unique_ptr<CpuSegmentationModel> model_;  // projection + recurrence
  std::unique_ptr<CpuSegmentationModel> model_onednn_;  // lstm_forward
  std::vector<float> wav_;
};

TEST_F(CpuSegmentationModelTest, MatchesFloat64ReferenceOnSpeech) {
  // Two windows in one batch: 0–10 s and 12–22 s.
  const int starts[2] = {0, 192000};
  std::vector<float> windows(2 * kWindowSamples);
  for (int i = 0; i < 2; ++i) {
    std::copy(wav_.begin() + starts[i],
              wav_.begin() + starts[i] + kWindowSamples,
              windows.begin() + i * kWindowSamples);
  }
  // Both LSTM implementations (projection + recurrence, oneDNN's
  // lstm_forward) against the same float64 reference.
  for (CpuSegmentationModel* model : {model_.get(), model_onednn_.get()}) {
    const char* name =
        model == model_.get() ? "projection+recurrence" : "oneDNN lstm_forward";
    std::vector<float> out(2 * kFramesPerWindow * kPowersetClasses);
    ASSERT_TRUE(model->Run(windows, 2, out).ok());
    for (int i = 0; i < 2; ++i) {
      auto ref = testing::ReferencePyanNet(*file_,
                                           windows.data() + i * kWindowSamples);
      double max_abs = 0;
      for (int j = 0; j < kFramesPerWindow * kPowersetClasses; ++j) {
        max_abs = std::max(
            max_abs, std::abs(out[i * kFramesPerWindow * 7 + j] - ref[j]));
      }
      std::cerr << "segmentation (" << name << ") vs float64 reference, window "
                << i << ": max abs " << max_abs << "\n";
      // float32 through SincNet, 4 BiLSTM layers over 589 steps, 3 linears.
      EXPECT_LT(max_abs, 1e-4) << name;
    }
  }
}

TEST_F(CpuSegmentationModelTest, BatchedEqualsOneByOne) {
  std::vector<float> windows(3 * kWindowSamples);
  std::copy(wav_.begin(), wav_.begin() + 3 * kWindowSamples, windows.begin());
  std::vector<float> batched(3 * kFramesPerWindow * 7);
  ASSERT_TRUE(model_->Run(windows, 3, batched).ok());
  for (int i = 0; i < 3; ++i) {
    std::vector<float> one(kFramesPerWindow * 7);
    ASSERT_TRUE(model_
                    ->Run(std::span<const float>(windows).subspan(
                              i * kWindowSamples, kWindowSamples),
                          1, one)
                    .ok());
    for (int j = 0; j < kFramesPerWindow * 7; ++j) {
      ASSERT_NEAR(one[j], batched[i * kFramesPerWindow * 7 + j], 1e-5)
          << i << " " << j;
    }
  }
}

// Bit for bit whatever the batch: 9 windows (1 s apart) in one call, one
// call each and in calls of 2 and 4 (the engine batches windows of
// different jobs together; a job's result must not depend on them).
TEST_F(CpuSegmentationModelTest, LogProbsOfAWindowDoNotDependOnItsBatch) {
  const int n = 9;
  const size_t per_window = kFramesPerWindow * kPowersetClasses;
  std::vector<float> windows(static_cast<size_t>(n) * kWindowSamples);
  for (int i = 0; i < n; ++i) {
    std::copy(wav_.begin() + i * 16000,
              wav_.begin() + i * 16000 + kWindowSamples,
              windows.begin() + static_cast<size_t>(i) * kWindowSamples);
  }
  std::vector<float> all(n * per_window);
  ASSERT_TRUE(model_->Run(windows, n, all).ok());
  for (int chunk : {1, 2, 4}) {
    for (int first = 0; first < n; first += chunk) {
      const int count = std::min(chunk, n - first);
      std::vector<float> part(count * per_window);
      ASSERT_TRUE(model_
                      ->Run(std::span<const float>(windows).subspan(
                                static_cast<size_t>(first) * kWindowSamples,
                                static_cast<size_t>(count) * kWindowSamples),
                            count, part)
                      .ok());
      for (size_t k = 0; k < part.size(); ++k) {
        ASSERT_EQ(part[k], all[first * per_window + k])
            << "calls of " << chunk << ", window " << first + k / per_window
            << ", value " << k % per_window;
      }
    }
  }
}

TEST_F(CpuSegmentationModelTest, RejectsBadShapes) {
  std::vector<float> windows(kWindowSamples), out(kFramesPerWindow * 7);
  EXPECT_EQ(model_->Run(windows, 2, out).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model_->Run(windows, 0, out).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<float> small(10);
  EXPECT_EQ(model_->Run(windows, 1, small).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CpuSegmentationModelCreateTest, MissingTensorIsNotFound) {
  const std::string path = TempPath("empty.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, {}, {}).ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto model = CpuSegmentationModel::Create(**file, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace diarization::models
