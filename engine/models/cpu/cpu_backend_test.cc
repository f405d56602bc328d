// CreateCpuBackend on a model directory written by make_random_models: both
// networks load, run, and agree with networks built directly from the same
// safetensors files; bad options are rejected.
#include "engine/models/cpu/cpu_backend.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/models/cpu/cpu_embedding_model.h"
#include "engine/models/cpu/cpu_segmentation_model.h"
#include "engine/models/format/model_dir.h"
#include "engine/models/format/random_model.h"
#include "gtest/gtest.h"
#include "testing/test_data.h"
#include "testing/wav.h"

namespace diarization::models {
namespace {

TEST(CpuBackendTest, LoadsModelDirectoryAndRuns) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp ? tmp : "/tmp", "/backend_models");
  ASSERT_TRUE(
      MakeRandomModelDirectory(
          dir, 3, diarization::testing::SharedModelsDir() + "/community-1-plda")
          .ok());
  auto model_dir = ModelDirectory::Open(dir);
  ASSERT_TRUE(model_dir.ok()) << model_dir.status();
  auto backend = CreateCpuBackend(**model_dir, {.threads = 1});
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ(backend->precision, "fp32");
  EXPECT_EQ(backend->segmentation->precision(), "fp32");
  EXPECT_EQ(backend->embedding->precision(), "fp32");
  EXPECT_NE(backend->description.find("1 threads"), std::string::npos)
      << backend->description;

  auto wav = testing::ReadWavOrDie("pyannote-audio/sample/sample.wav");
  std::vector<float> window(wav.begin(), wav.begin() + kWindowSamples);
  std::vector<float> log_probs(kFramesPerWindow * kPowersetClasses);
  ASSERT_TRUE(backend->segmentation->Run(window, 1, log_probs).ok());
  // Rows are log-probabilities: they exponentiate to a distribution.
  for (int t = 0; t < kFramesPerWindow; ++t) {
    double sum = 0;
    for (int c = 0; c < kPowersetClasses; ++c) {
      sum += std::exp(log_probs[t * kPowersetClasses + c]);
    }
    ASSERT_NEAR(sum, 1.0, 1e-5) << t;
  }
  // Same numbers as a network built directly from the directory's file.
  auto direct = CpuSegmentationModel::Create((*model_dir)->segmentation(), {});
  ASSERT_TRUE(direct.ok());
  std::vector<float> again(log_probs.size());
  ASSERT_TRUE((*direct)->Run(window, 1, again).ok());
  for (size_t i = 0; i < again.size(); ++i) {
    ASSERT_NEAR(again[i], log_probs[i], 1e-6);
  }

  std::vector<float> masks(kFramesPerWindow, 1.0f), emb(kEmbeddingDim);
  ASSERT_TRUE(backend->embedding->Run(window, 1, masks, 1, emb).ok());
  double norm = 0;
  for (float v : emb) norm += v * v;
  EXPECT_GT(norm, 0.0);
}

TEST(CpuBackendTest, RejectsNegativeThreads) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp ? tmp : "/tmp", "/backend_models2");
  ASSERT_TRUE(
      MakeRandomModelDirectory(
          dir, 4, diarization::testing::SharedModelsDir() + "/community-1-plda")
          .ok());
  auto model_dir = ModelDirectory::Open(dir);
  ASSERT_TRUE(model_dir.ok());
  EXPECT_EQ(CreateCpuBackend(**model_dir, {.threads = -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace diarization::models
