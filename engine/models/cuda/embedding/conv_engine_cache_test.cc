// The engine cache's file format and keying (no GPU): round trip, entries
// of other library versions and other GPUs never used, corrupt lines and
// files ignored and counted, two writers merged, Forget persisted.
#include "engine/models/cuda/embedding/conv_engine_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace diarization::models {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string p =
      absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name, "_", getpid());
  std::filesystem::remove(p);
  return p;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void Spit(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
}

ConvEngineEnvironment H200() {
  return {.gpu = "NVIDIA H200",
          .sm = 90,
          .cudnn_version = 91900,
          .frontend_version = 11800};
}

ConvLayerKey Layer(int n, int c, int h, int w, int k, int f, int stride) {
  return {.precision = "tf32",
          .policy = "graph+rtc",
          .epilogue = "conv+bias+relu",
          .n = n,
          .c = c,
          .h = h,
          .w = w,
          .k = k,
          .kernel_h = f,
          .kernel_w = f,
          .stride_h = stride,
          .stride_w = stride,
          .pad_h = f / 2,
          .pad_w = f / 2,
          .workspace_limit = int64_t{256} << 20};
}

std::unique_ptr<ConvEngineCache> LoadOrDie(const std::string& path) {
  auto c = ConvEngineCache::Load(path);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : nullptr;
}

TEST(ConvEngineCacheTest, MissingFileIsAnEmptyCache) {
  const std::string path = TempPath("cache_missing");
  auto c = LoadOrDie(path);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->load_report().missing);
  EXPECT_EQ(c->load_report().entries, 0);
  EXPECT_FALSE(c->Find(H200(), Layer(32, 32, 80, 998, 32, 3, 1)).has_value());
  EXPECT_FALSE(c->dirty());
  EXPECT_TRUE(c->Save().ok());  // clean: writes nothing
  EXPECT_FALSE(std::filesystem::exists(path));
}

// Fresh random layers and engine names survive a save and a load exactly.
TEST(ConvEngineCacheTest, RoundTripOfRandomEntries) {
  const std::string path = TempPath("cache_round_trip");
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> dim(1, 2000), knob(-1, 64);
  std::vector<std::pair<ConvLayerKey, ConvEngineChoice>> written;
  {
    auto c = LoadOrDie(path);
    ASSERT_NE(c, nullptr);
    for (int i = 0; i < 40; ++i) {
      ConvLayerKey l = Layer(dim(rng), dim(rng), dim(rng), dim(rng), dim(rng),
                             i % 2 ? 3 : 1, 1 + i % 2);
      l.precision = i % 3 ? "tf32" : "mixed";
      ConvEngineChoice ch;
      ch.engine = i % 7 == 0 ? "legacy"
                             : absl::StrCat("eng", dim(rng), "_k2=", knob(rng),
                                            "_k13=", knob(rng));
      ch.ms = dim(rng) / 1000.0;
      ch.workspace = int64_t{dim(rng)} << 16;
      c->Record(H200(), l, ch);
      written.push_back({l, ch});
    }
    EXPECT_TRUE(c->dirty());
    ASSERT_TRUE(c->Save().ok());
    EXPECT_FALSE(c->dirty());
  }
  auto c = LoadOrDie(path);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->load_report().corrupt, 0);
  EXPECT_EQ(c->load_report().entries, static_cast<int>(written.size()));
  for (const auto& [l, ch] : written) {
    std::optional<ConvEngineChoice> got = c->Find(H200(), l);
    ASSERT_TRUE(got.has_value()) << l.ToString();
    EXPECT_EQ(got->engine, ch.engine);
    EXPECT_NEAR(got->ms, ch.ms, 1e-5 * ch.ms);
    EXPECT_EQ(got->workspace, ch.workspace);
  }
  EXPECT_EQ(c->Count(H200()).usable, static_cast<int>(written.size()));
}

// Every part of the key matters: a layer that differs only in its filter
// size (the 3x3/2 conv1 and the 1x1/2 shortcut of a stride-2 block share
// n, c, h, w, k and stride), its epilogue, precision, policy or workspace
// limit, or the same layer on another GPU or library version, is a miss.
TEST(ConvEngineCacheTest, KeysDifferInEveryField) {
  const std::string path = TempPath("cache_keys");
  auto c = LoadOrDie(path);
  ASSERT_NE(c, nullptr);
  const ConvLayerKey base = Layer(32, 32, 80, 998, 64, 3, 2);
  c->Record(H200(), base, {.engine = "eng4_k2=1", .ms = 0.2, .workspace = 0});
  ASSERT_TRUE(c->Find(H200(), base).has_value());
  std::vector<ConvLayerKey> others(8, base);
  others[0].kernel_h = others[0].kernel_w = 1;
  others[0].pad_h = others[0].pad_w = 0;
  others[1].epilogue = "conv";
  others[2].precision = "mixed";
  others[3].policy = "fastest+rtc";
  others[4].workspace_limit = int64_t{64} << 20;
  others[5].n = 31;
  others[6].stride_w = 1;
  others[7].pad_w = 0;
  for (const ConvLayerKey& l : others) {
    EXPECT_NE(l.ToString(), base.ToString());
    EXPECT_FALSE(c->Find(H200(), l).has_value()) << l.ToString();
  }
  ConvEngineEnvironment gpu = H200(), sm = H200(), cudnn = H200(), fe = H200();
  gpu.gpu = "NVIDIA A100-SXM4-80GB";
  sm.sm = 80;
  cudnn.cudnn_version = 92000;
  fe.frontend_version = 11900;
  for (const ConvEngineEnvironment& e : {gpu, sm, cudnn, fe}) {
    EXPECT_FALSE(c->Find(e, base).has_value()) << e.gpu << " " << e.sm;
  }
}

// Entries written on another GPU or with other library versions stay in the
// file but are never used, and the census says what they are.
TEST(ConvEngineCacheTest, OtherGpuAndStaleVersionsAreNotUsed) {
  const std::string path = TempPath("cache_foreign");
  const ConvLayerKey l = Layer(32, 128, 20, 250, 256, 1, 2);
  ConvEngineEnvironment a100 = H200(), old = H200();
  a100.gpu = "NVIDIA A100-SXM4-80GB";
  a100.sm = 80;
  old.cudnn_version = 91800;
  {
    auto c = LoadOrDie(path);
    ASSERT_NE(c, nullptr);
    c->Record(a100, l, {.engine = "eng0", .ms = 0.1, .workspace = 0});
    c->Record(old, l, {.engine = "eng1", .ms = 0.1, .workspace = 0});
    ASSERT_TRUE(c->Save().ok());
  }
  auto c = LoadOrDie(path);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->load_report().entries, 2);
  EXPECT_FALSE(c->Find(H200(), l).has_value());
  const ConvEngineCache::Census census = c->Count(H200());
  EXPECT_EQ(census.usable, 0);
  EXPECT_EQ(census.other_gpu, 1);
  EXPECT_EQ(census.other_versions, 1);
  // This GPU's own choice is added beside them; theirs are kept.
  c->Record(H200(), l, {.engine = "eng2", .ms = 0.1, .workspace = 0});
  ASSERT_TRUE(c->Save().ok());
  auto again = LoadOrDie(path);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->load_report().entries, 3);
  EXPECT_EQ(again->Find(H200(), l).value().engine, "eng2");
  EXPECT_EQ(again->Find(a100, l).value().engine, "eng0");
}

TEST(ConvEngineCacheTest, CorruptLinesAreCountedAndSkipped) {
  const std::string path = TempPath("cache_corrupt");
  const ConvLayerKey a = Layer(32, 32, 80, 998, 32, 3, 1);
  const ConvLayerKey b = Layer(32, 64, 40, 499, 64, 3, 1);
  const ConvLayerKey d = Layer(32, 256, 10, 125, 256, 3, 1);
  {
    auto c = LoadOrDie(path);
    ASSERT_NE(c, nullptr);
    c->Record(H200(), a, {.engine = "eng4_k2=1", .ms = 0.4, .workspace = 0});
    c->Record(H200(), b, {.engine = "eng7_k3=2", .ms = 0.2, .workspace = 1024});
    c->Record(H200(), d, {.engine = "eng9", .ms = 0.1, .workspace = 0});
    ASSERT_TRUE(c->Save().ok());
  }
  std::string text = Slurp(path);
  // An edited engine id on b's line (its checksum no longer matches), a
  // line of garbage, and d's line cut in the middle (a torn write).
  const size_t pos = text.find("eng7_k3=2");
  ASSERT_NE(pos, std::string::npos);
  text[pos + 3] = '8';
  // (Lines are in key order: d's line is moved to the end, then cut.)
  const size_t d_at = text.find("eng9");
  ASSERT_NE(d_at, std::string::npos);
  const size_t d_begin = text.rfind('\n', d_at) + 1;
  const size_t d_end = text.find('\n', d_at) + 1;
  const std::string d_line = text.substr(d_begin, d_end - d_begin);
  text.erase(d_begin, d_end - d_begin);
  text += "not\ta\tcache\tline\n" + d_line.substr(0, d_line.size() / 2);
  Spit(path, text);
  auto c = LoadOrDie(path);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->load_report().foreign_format);
  EXPECT_EQ(c->load_report().entries, 1);
  EXPECT_EQ(c->load_report().corrupt, 3);
  ASSERT_TRUE(c->Find(H200(), a).has_value());
  EXPECT_EQ(c->Find(H200(), a).value().engine, "eng4_k2=1");
  EXPECT_FALSE(c->Find(H200(), b).has_value());
  EXPECT_FALSE(c->Find(H200(), d).has_value());
}

// A file that is not a cache (no header: another program's file, random
// bytes) is not read at all, and the first Save replaces it with a valid
// one.
TEST(ConvEngineCacheTest, AFileOfAnotherFormatIsIgnoredAndReplaced) {
  const std::string path = TempPath("cache_garbage");
  std::mt19937 rng(std::random_device{}());
  std::string junk(4096, '\0');
  for (char& ch : junk) ch = static_cast<char>(rng());
  Spit(path, junk);
  auto c = LoadOrDie(path);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->load_report().foreign_format);
  EXPECT_EQ(c->load_report().entries, 0);
  const ConvLayerKey l = Layer(32, 32, 80, 998, 32, 3, 1);
  c->Record(H200(), l, {.engine = "eng0", .ms = 1, .workspace = 0});
  ASSERT_TRUE(c->Save().ok());
  auto again = LoadOrDie(path);
  ASSERT_NE(again, nullptr);
  EXPECT_FALSE(again->load_report().foreign_format);
  EXPECT_EQ(again->load_report().entries, 1);
  EXPECT_EQ(again->Find(H200(), l).value().engine, "eng0");
}

// Two writers of one file (two processes, or two caches in one): each
// Save merges what the other wrote; a Forget is written through.
TEST(ConvEngineCacheTest, WritersMergeAndForgetPersists) {
  const std::string path = TempPath("cache_merge");
  const ConvLayerKey a = Layer(32, 32, 80, 998, 32, 3, 1);
  const ConvLayerKey b = Layer(16, 32, 80, 998, 32, 3, 1);
  auto first = LoadOrDie(path);
  auto second = LoadOrDie(path);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  first->Record(H200(), a, {.engine = "eng1", .ms = 1, .workspace = 0});
  ASSERT_TRUE(first->Save().ok());
  second->Record(H200(), b, {.engine = "eng2", .ms = 1, .workspace = 0});
  ASSERT_TRUE(second->Save().ok());
  {
    auto c = LoadOrDie(path);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->Find(H200(), a).value().engine, "eng1");
    EXPECT_EQ(c->Find(H200(), b).value().engine, "eng2");
    c->Forget(H200(), a);
    EXPECT_FALSE(c->Find(H200(), a).has_value());
    ASSERT_TRUE(c->Save().ok());
  }
  auto c = LoadOrDie(path);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->Find(H200(), a).has_value());
  EXPECT_EQ(c->Find(H200(), b).value().engine, "eng2");
  // Recording the same choice again changes nothing.
  c->Record(H200(), b, {.engine = "eng2", .ms = 1, .workspace = 0});
  EXPECT_FALSE(c->dirty());
}

TEST(ConvEngineCacheTest, TabsInTheGpuNameKeepTheLineParseable) {
  ConvEngineEnvironment env = H200();
  env.gpu = "odd\tname\nwith breaks";
  const ConvEngineCache::Entry e{
      .env = env,
      .layer = Layer(1, 2, 3, 4, 5, 3, 1).ToString(),
      .choice = {.engine = "eng3", .ms = 0.5, .workspace = 7}};
  const std::string line = ConvEngineCache::FormatLine(e);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  std::optional<ConvEngineCache::Entry> back = ConvEngineCache::ParseLine(line);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->env.gpu, "odd name with breaks");
  EXPECT_EQ(back->choice, e.choice);
  // A line with a field too many or too few is not an entry.
  EXPECT_FALSE(ConvEngineCache::ParseLine(line + "\tx").has_value());
  EXPECT_FALSE(
      ConvEngineCache::ParseLine(line.substr(0, line.rfind('\t'))).has_value());
}

// Plan names as the 16:27 round printed them, and names that are not one.
TEST(ConvEngineCacheTest, ParsesTheFrontendsPlanNames) {
  int64_t id = -1;
  std::map<int, int64_t> knobs;
  ASSERT_TRUE(ParseCudnnEngineTag("eng4_k24=15", &id, &knobs));
  EXPECT_EQ(id, 4);
  EXPECT_EQ(knobs, (std::map<int, int64_t>{{24, 15}}));
  ASSERT_TRUE(ParseCudnnEngineTag("eng51_k2=16_k13=0_k18=0_k25=1_k27=2_k28=1",
                                  &id, &knobs));
  EXPECT_EQ(id, 51);
  EXPECT_EQ(knobs, (std::map<int, int64_t>{
                       {2, 16}, {13, 0}, {18, 0}, {25, 1}, {27, 2}, {28, 1}}));
  ASSERT_TRUE(ParseCudnnEngineTag("eng38_k2=0_k13=-1", &id, &knobs));
  EXPECT_EQ(knobs.at(13), -1);
  ASSERT_TRUE(ParseCudnnEngineTag("eng0", &id, &knobs));
  EXPECT_EQ(id, 0);
  EXPECT_TRUE(knobs.empty());
  for (const char* bad :
       {"legacy", "cublas-strided-gemm", "eng", "engX", "eng-1", "eng4_",
        "eng4_k24", "eng4_k24=", "eng4_24=1", "eng4_k24=1_k24=2", "eng4_kx=1",
        "eng4_k24=1=2", ""}) {
    EXPECT_FALSE(ParseCudnnEngineTag(bad, &id, &knobs)) << bad;
  }
}

TEST(ConvEngineCacheTest, SharedIsOneObjectPerPath) {
  const std::string p1 = TempPath("cache_shared1"),
                    p2 = TempPath("cache_shared2");
  auto a = ConvEngineCache::Shared(p1);
  auto b = ConvEngineCache::Shared(p1);
  auto c = ConvEngineCache::Shared(p2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_NE(a->get(), c->get());
  EXPECT_EQ(ConvEngineCache::Load("").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace diarization::models
