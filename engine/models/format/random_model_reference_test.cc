// The committed pyannote references (engine/models/testdata/
// reference_random_seed1.*, made by tools/reference/record.py) were computed
// with the weights that make_random_models writes for seed 1. This test
// regenerates those weights and checks that they are still the same bytes,
// so the CPU/CUDA network tests compare against the right references.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/models/format/manifest.h"
#include "engine/models/format/model_dir.h"
#include "engine/models/format/random_model.h"
#include "engine/models/format/safetensors.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "testing/pipeline_recording.h"
#include "testing/test_data.h"

namespace diarization::models {
namespace {

namespace fs = std::filesystem;

fs::path Testdata() {
  return fs::path(testing::SourceRoot()) / "engine/models/testdata";
}

nlohmann::json Info() {
  std::ifstream in(Testdata() / "reference_random_seed1.json");
  EXPECT_TRUE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

TEST(RandomModelReferenceTest, RegeneratedWeightsAreTheRecordedOnes) {
  const nlohmann::json info = Info();
  ASSERT_EQ(info["seed"].get<int>(), 1);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path dir = fs::path(tmp ? tmp : "/tmp") / "seed1";
  const std::string plda =
      (fs::path(testing::SharedModelsDir()) / "community-1-plda").string();
  ASSERT_TRUE(MakeRandomModelDirectory(dir.string(), 1, plda).ok());
  for (const char* file :
       {"segmentation.safetensors", "embedding.safetensors"}) {
    EXPECT_EQ(*Sha256HexOfFile((dir / file).string()),
              info["models"][file].get<std::string>())
        << file << " changed: rerun tools/reference/record.py (README.md)";
  }
}

TEST(RandomModelReferenceTest, ReferenceFileHasTheDocumentedArrays) {
  const nlohmann::json info = Info();
  auto file = SafetensorsFile::Open(
      (Testdata() / "reference_random_seed1.safetensors").string());
  ASSERT_TRUE(file.ok()) << file.status();
  const int64_t b = info["windows"].size();
  const int64_t m = info["mask_names"].size();
  const std::vector<TensorSpec> expected = {
      {"windows.offset_samples", DType::kI64, {b}},
      {"segmentation.log_probs", DType::kF32, {b, 589, 7}},
      {"embedding.fbank", DType::kF32, {b, 998, 80}},
      {"embedding.masks", DType::kF32, {b, m, 589}},
      {"embedding.per_mask", DType::kF32, {b, m, 256}},
      {"embedding.multi_mask", DType::kF32, {b, m, 256}},
  };
  ASSERT_TRUE((*file)->Validate(expected).ok()) << (*file)->Validate(expected);
  EXPECT_EQ(*Sha256HexOfFile((*file)->path()),
            info["reference_file_sha256"].get<std::string>());

  // The audio the windows were cut from is in the golden data folder.
  for (const auto& w : info["windows"]) {
    const fs::path audio =
        fs::path(testing::TestDataDir()) / w["audio"].get<std::string>();
    EXPECT_EQ(*Sha256HexOfFile(audio.string()),
              w["audio_sha256"].get<std::string>())
        << audio;
  }

  // pyannote's all-zero-mask embedding is exactly seg_1.bias (models.md §4),
  // which ties the reference to this generator's weights independently of
  // the file hashes above.
  const auto weights = RandomResNet34Tensors(1);
  const TensorData& bias = weights.back();
  ASSERT_EQ(bias.spec.name, "resnet.seg_1.bias");
  const auto per_mask = (*file)->Find("embedding.per_mask")->f32();
  for (int64_t i = 0; i < b; ++i) {
    EXPECT_EQ(std::memcmp(per_mask.data() + i * m * 256, bias.bytes.data(),
                          256 * sizeof(float)),
              0)
        << "window " << i;
  }
}

// The whole-pipeline references (record_pipeline.py, testing/testdata/) were
// made with the seed-1 networks (pipeline_random_seed1) or the seed-1
// embedding network (pipeline_real_segmentation) and the shared community-1
// PLDA.
TEST(RandomModelReferenceTest, PipelineReferencesUseTheseWeights) {
  const nlohmann::json seed1 = Info();
  const std::string plda_dir =
      (fs::path(testing::SharedModelsDir()) / "community-1-plda").string();
  const std::vector<std::string> plda_hashes = {
      *Sha256HexOfFile(plda_dir + "/xvec_transform.npz"),
      *Sha256HexOfFile(plda_dir + "/plda.npz")};
  for (const char* folder :
       {"pipeline_random_seed1", "pipeline_real_segmentation"}) {
    const fs::path dir = testing::PipelineRecordingDir(folder);
    std::ifstream in(dir / "info.json");
    ASSERT_TRUE(in.good()) << folder;
    std::stringstream ss;
    ss << in.rdbuf();
    const nlohmann::json info = nlohmann::json::parse(ss.str());
    const auto& models = info["models"];
    EXPECT_EQ(models["embedding"]["sha256"].get<std::string>(),
              seed1["models"]["embedding.safetensors"].get<std::string>())
        << folder;
    if (std::string(folder) == "pipeline_random_seed1") {
      EXPECT_EQ(models["segmentation"]["sha256"].get<std::string>(),
                seed1["models"]["segmentation.safetensors"].get<std::string>());
    } else {
      EXPECT_FALSE(models["segmentation"]["random_weights"].get<bool>());
    }
    EXPECT_EQ(models["plda"]["sha256"].get<std::vector<std::string>>(),
              plda_hashes)
        << folder;
    auto arrays = SafetensorsFile::Open((dir / "arrays.safetensors").string());
    ASSERT_TRUE(arrays.ok()) << arrays.status();
    for (const auto& clip : info["clips"]) {
      const std::string name = clip["clip"].get<std::string>();
      const int64_t num_windows = clip["chunks"].get<int64_t>();
      EXPECT_TRUE(
          (*arrays)
              ->Validate(
                  {{name + ".segmentations", DType::kU8, {num_windows, 589, 3}},
                   {name + ".embeddings", DType::kF32, {num_windows, 3, 256}}},
                  (*arrays)->names())
              .ok())
          << folder << " " << name;
      EXPECT_TRUE(fs::exists(dir / (name + ".rttm")));
      const fs::path audio =
          fs::path(testing::TestDataDir()) / clip["audio"].get<std::string>();
      EXPECT_EQ(*Sha256HexOfFile(audio.string()),
                clip["audio_sha256"].get<std::string>());
    }
  }
}

}  // namespace
}  // namespace diarization::models
