#include "engine/models/format/model_dir.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "engine/models/format/manifest.h"
#include "engine/models/format/model_specs.h"
#include "engine/models/format/random_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "testing/test_data.h"

namespace diarization::models {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Plda() {
  return (fs::path(testing::SharedModelsDir()) / "community-1-plda").string();
}

std::string Fresh(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path p =
      fs::path(tmp ? tmp : "/tmp") / (std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  return p.string();
}

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Write(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

class ModelDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = Fresh("models");
    ASSERT_TRUE(MakeRandomModelDirectory(dir_, 11, Plda()).ok());
  }
  absl::Status Open() { return ModelDirectory::Open(dir_).status(); }
  nlohmann::json Manifest() {
    return nlohmann::json::parse(Read(fs::path(dir_) / "manifest.json"));
  }
  void SetManifest(const nlohmann::json& j) {
    Write(fs::path(dir_) / "manifest.json", j.dump(1));
  }
  std::string dir_;
};

TEST_F(ModelDirTest, OpensARandomDirectory) {
  auto md = ModelDirectory::Open(dir_);
  ASSERT_TRUE(md.ok()) << md.status();
  EXPECT_EQ((*md)->segmentation().names().size(), 54u);
  EXPECT_EQ((*md)->embedding().names().size(), 218u);
  EXPECT_TRUE((*md)->segmentation().Validate(PyanNetTensorSpecs()).ok());
  EXPECT_TRUE((*md)->embedding().Validate(ResNet34TensorSpecs()).ok());
  EXPECT_EQ((*md)->plda_dir(), (fs::path(dir_) / "plda").string());
  EXPECT_TRUE(fs::exists((*md)->xvec_transform_path()));
  EXPECT_TRUE(fs::exists((*md)->plda_path()));
  const ModelDirectorySummary s = (*md)->summary();
  EXPECT_EQ(s.format_version, 1);
  EXPECT_TRUE(s.segmentation.random_weights);
  EXPECT_TRUE(s.embedding.random_weights);
  EXPECT_FALSE(s.plda.random_weights);
  EXPECT_THAT(s.embedding.source, HasSubstr("seed 11"));
  EXPECT_THAT(s.embedding.source, HasSubstr("NOT a trained model"));
  EXPECT_EQ(s.segmentation.architecture, "PyanNet");
  EXPECT_EQ(s.segmentation.precision, "fp32");
  ASSERT_EQ(s.plda.files.size(), 2u);
  // The PLDA files are copied unchanged: same hash as the originals.
  EXPECT_EQ(s.plda.files[1].path, "plda/plda.npz");
  EXPECT_EQ(s.plda.files[1].sha256,
            *Sha256HexOfFile((fs::path(Plda()) / "plda.npz").string()));
  // The weights read back are the generator's.
  const auto expected = RandomResNet34Tensors(11);
  for (const TensorData& t : expected) {
    const TensorView* got = (*md)->embedding().Find(t.spec.name);
    ASSERT_NE(got, nullptr);
    ASSERT_EQ(got->bytes.size(), t.bytes.size());
    EXPECT_EQ(std::memcmp(got->bytes.data(), t.bytes.data(), t.bytes.size()), 0)
        << t.spec.name;
  }
}

// SHA-256 of "abc" (FIPS 180-2 example), an independent check of the hash.
// A random directory whose segmentation is another file's: those tensors
// byte for byte, marked not random; the embedding is the seed's own.
TEST_F(ModelDirTest, SegmentationFromAnotherFile) {
  const std::string other = Fresh("with_segmentation");
  const std::string source =
      (fs::path(dir_) / "segmentation.safetensors").string();
  ASSERT_TRUE(
      MakeRandomModelDirectoryWithSegmentation(other, 12, Plda(), source).ok());
  auto md = ModelDirectory::Open(other);
  ASSERT_TRUE(md.ok()) << md.status();
  auto mine = ModelDirectory::Open(dir_);
  ASSERT_TRUE(mine.ok()) << mine.status();
  for (const std::string& name : (*mine)->segmentation().names()) {
    const TensorView* a = (*mine)->segmentation().Find(name);
    const TensorView* b = (*md)->segmentation().Find(name);
    ASSERT_NE(b, nullptr) << name;
    ASSERT_EQ(a->bytes.size(), b->bytes.size()) << name;
    EXPECT_EQ(std::memcmp(a->bytes.data(), b->bytes.data(), a->bytes.size()), 0)
        << name;
  }
  // Seed 12's embedding, not seed 11's.
  const TensorView* e11 =
      (*mine)->embedding().Find((*mine)->embedding().names().front());
  const TensorView* e12 =
      (*md)->embedding().Find((*md)->embedding().names().front());
  ASSERT_EQ(e11->bytes.size(), e12->bytes.size());
  EXPECT_NE(
      std::memcmp(e11->bytes.data(), e12->bytes.data(), e11->bytes.size()), 0);
  const ModelDirectorySummary s = (*md)->summary();
  EXPECT_FALSE(s.segmentation.random_weights);
  EXPECT_TRUE(s.embedding.random_weights);
  // Not PyanNet's tensors: refused, naming the file.
  const std::string embedding =
      (fs::path(dir_) / "embedding.safetensors").string();
  const absl::Status bad = MakeRandomModelDirectoryWithSegmentation(
      Fresh("bad"), 12, Plda(), embedding);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find(embedding), absl::string_view::npos)
      << bad.message();
}

TEST(Sha256Test, KnownVector) {
  const std::string abc = "abc";
  EXPECT_EQ(Sha256Hex(std::as_bytes(std::span(abc.data(), abc.size()))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(ModelDirTest, MissingDirectoryOrManifest) {
  EXPECT_EQ(ModelDirectory::Open(dir_ + "_nope").status().code(),
            absl::StatusCode::kNotFound);
  fs::remove(fs::path(dir_) / "manifest.json");
  const absl::Status s = Open();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("make_random_models"));
}

TEST_F(ModelDirTest, MissingFile) {
  fs::remove(fs::path(dir_) / "plda" / "plda.npz");
  const absl::Status s = Open();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("plda/plda.npz"));
}

TEST_F(ModelDirTest, ChangedByteIsDetectedByTheFileHash) {
  const fs::path p = fs::path(dir_) / "embedding.safetensors";
  std::string bytes = Read(p);
  bytes[bytes.size() - 100] ^= 1;
  Write(p, bytes);
  const absl::Status s = Open();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("embedding.safetensors has SHA-256"));
  // Without hash checks the (structurally valid) file still opens.
  ModelDirectory::Options no_hash;
  no_hash.verify_hashes = false;
  EXPECT_TRUE(ModelDirectory::Open(dir_, no_hash).ok());
}

TEST_F(ModelDirTest, TruncatedFileIsDetectedBySize) {
  const fs::path p = fs::path(dir_) / "segmentation.safetensors";
  std::string bytes = Read(p);
  Write(p, bytes.substr(0, bytes.size() - 4));
  const absl::Status s = Open();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("the manifest says"));
}

TEST_F(ModelDirTest, TensorHashMismatch) {
  nlohmann::json j = Manifest();
  j["segmentation"]["tensors"][5]["sha256"] = std::string(64, '0');
  SetManifest(j);
  const absl::Status s = Open();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("tensor sincnet.conv1d.0.filterbank.n_"));
}

TEST_F(ModelDirTest, ManifestTensorShapeMismatch) {
  nlohmann::json j = Manifest();
  j["embedding"]["tensors"][0]["shape"] = {32, 1, 5, 5};
  SetManifest(j);
  const absl::Status s = Open();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("resnet.conv1.weight F32[32,1,5,5]"));
}

TEST_F(ModelDirTest, WrongModelInTheSafetensorsFile) {
  // A segmentation file in the embedding slot, with a consistent manifest
  // entry: the tensor check must list what is wrong.
  const fs::path seg = fs::path(dir_) / "segmentation.safetensors";
  const fs::path emb = fs::path(dir_) / "embedding.safetensors";
  fs::copy_file(seg, emb, fs::copy_options::overwrite_existing);
  nlohmann::json j = Manifest();
  j["embedding"]["files"][0]["sha256"] = *Sha256HexOfFile(emb.string());
  j["embedding"]["files"][0]["bytes"] = fs::file_size(emb);
  SetManifest(j);
  const absl::Status s = Open();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("218 missing tensor(s)"));
  EXPECT_THAT(s.message(), HasSubstr("54 unexpected tensor(s)"));
}

TEST_F(ModelDirTest, BadManifestFields) {
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {[](auto& j) { j["format_version"] = 2; }, "format_version 2"},
      {[](auto& j) { j["format"] = "x"; }, "format is \"x\""},
      {[](auto& j) { j.erase("plda"); }, "plda is missing"},
      {[](auto& j) { j["embedding"].erase("source"); },
       "embedding.source is missing"},
      {[](auto& j) { j["embedding"]["precision"] = "fp16"; },
       "embedding.precision is \"fp16\""},
      {[](auto& j) { j["segmentation"]["random_weights"] = "yes"; },
       "segmentation.random_weights"},
      {[](auto& j) { j["plda"]["files"][0]["sha256"] = "ABC"; },
       "plda.files[0].sha256"},
      {[](auto& j) { j["plda"]["files"][0]["path"] = "../x.npz"; },
       "must be relative"},
      {[](auto& j) { j["segmentation"]["architecture"] = "SSeRiouSS"; },
       "this build runs \"PyanNet\""},
      {[](auto& j) { j["plda"]["files"].erase(1); },
       "expected [plda/xvec_transform.npz, plda/plda.npz]"},
  };
  const nlohmann::json original = Manifest();
  for (const Case& c : cases) {
    nlohmann::json j = original;
    c.edit(j);
    SetManifest(j);
    const absl::Status s = Open();
    EXPECT_FALSE(s.ok()) << c.expected;
    EXPECT_THAT(s.message(), HasSubstr(c.expected));
  }
  Write(fs::path(dir_) / "manifest.json", "{not json");
  EXPECT_THAT(Open().message(), HasSubstr("not valid JSON"));
}

TEST(ManifestTest, SerializeParseRoundTrip) {
  Manifest m;
  m.segmentation = {"seg",
                    "PyanNet",
                    {{"segmentation.safetensors", std::string(64, 'a'), 12}},
                    {{{"w", DType::kF32, {2, 3}}, std::string(64, 'b')}},
                    "tf32",
                    true,
                    "src"};
  m.embedding = {"emb",
                 "WeSpeakerResNet34",
                 {{"embedding.safetensors", std::string(64, 'c'), 5}},
                 {},
                 "fp32",
                 false,
                 "src2"};
  m.plda = {"plda", "VBx-PLDA", {{"plda/plda.npz", std::string(64, 'd'), 1}},
            {},     "",         false,
            "src3"};
  const std::string text = SerializeManifest(m);
  auto parsed = ParseManifest(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(SerializeManifest(*parsed), text);
  EXPECT_EQ(parsed->segmentation.tensors[0].spec.shape,
            (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(parsed->segmentation.precision, "tf32");
  EXPECT_TRUE(parsed->segmentation.random_weights);
}

TEST(WriteModelDirectoryTest, RejectsIncompleteNetworks) {
  ModelDirectoryContents c;
  c.segmentation = RandomPyanNetTensors(1);
  c.segmentation.pop_back();
  c.embedding = RandomResNet34Tensors(1);
  c.plda_source_dir = Plda();
  c.segmentation_info.architecture = "PyanNet";
  const absl::Status s = WriteModelDirectory(Fresh("incomplete"), c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("missing tensor classifier.bias"));
}

}  // namespace
}  // namespace diarization::models
