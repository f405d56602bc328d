#include "engine/models/format/safetensors.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diarization::models {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return (std::filesystem::path(dir ? dir : "/tmp") /
          (std::to_string(::getpid()) + "_" + name))
      .string();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A safetensors file assembled by hand: length field, header text, data.
std::string Craft(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::string FloatBytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(float));
}

template <typename T>
std::vector<std::byte> AsBytes(const std::vector<T>& v) {
  std::vector<std::byte> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

absl::Status OpenStatus(const std::string& bytes, const std::string& name) {
  const std::string path = TempPath(name);
  WriteBytes(path, bytes);
  return SafetensorsFile::Open(path).status();
}

TEST(SafetensorsTest, ReadsHandCraftedFile) {
  // Header written as the safetensors spec shows it; odd length on purpose so
  // the data is not 8-byte aligned in the file.
  const std::string header =
      R"({"b":{"dtype":"I64","shape":[],"data_offsets":[8,16]},)"
      R"("a":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},)"
      R"("__metadata__":{"format":"pt"}})";
  ASSERT_NE(header.size() % 8, 0u);
  const int64_t seven = 7;
  const std::string data =
      FloatBytes({1.5f, -2.25f}) +
      std::string(reinterpret_cast<const char*>(&seven), 8);
  const std::string path = TempPath("crafted.safetensors");
  WriteBytes(path, Craft(header, data));

  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ((*file)->metadata().at("format"), "pt");
  const TensorView* a = (*file)->Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::kF32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(a->num_elements(), 2);
  ASSERT_EQ(a->f32().size(), 2u);
  EXPECT_EQ(a->f32()[0], 1.5f);
  EXPECT_EQ(a->f32()[1], -2.25f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->f32().data()) % alignof(float), 0u);
  const TensorView* b = (*file)->Find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::kI64);
  EXPECT_TRUE(b->shape.empty());
  EXPECT_EQ(b->num_elements(), 1);
  EXPECT_TRUE(b->f32().empty());
  int64_t got = 0;
  std::memcpy(&got, b->bytes.data(), 8);
  EXPECT_EQ(got, 7);
  EXPECT_EQ((*file)->Find("c"), nullptr);
}

TEST(SafetensorsTest, WriterOutputHasTheSpecLayout) {
  const std::string path = TempPath("written.safetensors");
  std::vector<TensorData> tensors;
  tensors.push_back({{"w", DType::kF32, {2}}, AsBytes<float>({3.0f, 4.0f})});
  ASSERT_TRUE(WriteSafetensors(path, tensors, {{"k", "v"}}).ok());
  const std::string bytes = ReadBytes(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 8);
  std::string header = bytes.substr(8, n);
  header.erase(header.find_last_not_of(' ') + 1);
  EXPECT_EQ(header, R"({"__metadata__":{"k":"v"},)"
                    R"("w":{"data_offsets":[0,8],"dtype":"F32","shape":[2]}})");
  EXPECT_EQ(bytes.substr(8 + n), FloatBytes({3.0f, 4.0f}));
}

TEST(SafetensorsTest, RoundTripsRandomTensorsOfEveryDType) {
  std::mt19937_64 rng(std::random_device{}());
  const std::vector<DType> dtypes = {DType::kF32,  DType::kF64, DType::kF16,
                                     DType::kBF16, DType::kI64, DType::kI32,
                                     DType::kI8,   DType::kU8,  DType::kBool};
  std::vector<TensorData> tensors;
  for (size_t i = 0; i < 30; ++i) {
    TensorData t;
    t.spec.name = "t" + std::to_string(i);
    t.spec.dtype = dtypes[rng() % dtypes.size()];
    const int rank = static_cast<int>(rng() % 4);
    for (int r = 0; r < rank; ++r) t.spec.shape.push_back(rng() % 5);
    int64_t n = 1;
    for (int64_t d : t.spec.shape) n *= d;
    t.bytes.resize(n * DTypeSize(t.spec.dtype));
    for (auto& b : t.bytes) b = static_cast<std::byte>(rng());
    tensors.push_back(std::move(t));
  }
  const std::string path = TempPath("roundtrip.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, tensors, {}).ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE((*file)->metadata().empty());
  std::vector<TensorSpec> specs;
  for (const TensorData& t : tensors) {
    const TensorView* v = (*file)->Find(t.spec.name);
    ASSERT_NE(v, nullptr) << t.spec.name;
    EXPECT_EQ(v->dtype, t.spec.dtype);
    EXPECT_EQ(v->shape, t.spec.shape);
    ASSERT_EQ(v->bytes.size(), t.bytes.size());
    EXPECT_EQ(std::memcmp(v->bytes.data(), t.bytes.data(), t.bytes.size()), 0);
    specs.push_back(t.spec);
  }
  EXPECT_TRUE((*file)->Validate(specs).ok());
}

TEST(SafetensorsTest, WriterRejectsBadInput) {
  const std::string path = TempPath("bad_write.safetensors");
  std::vector<TensorData> wrong_size;
  wrong_size.push_back({{"w", DType::kF32, {3}}, AsBytes<float>({1.0f})});
  EXPECT_THAT(WriteSafetensors(path, wrong_size, {}).message(),
              HasSubstr("needs 12 bytes but 4 were given"));
  std::vector<TensorData> duplicate;
  duplicate.push_back({{"w", DType::kF32, {1}}, AsBytes<float>({1.0f})});
  duplicate.push_back({{"w", DType::kF32, {1}}, AsBytes<float>({1.0f})});
  EXPECT_THAT(WriteSafetensors(path, duplicate, {}).message(),
              HasSubstr("duplicate tensor name"));
  EXPECT_FALSE(WriteSafetensors("/nonexistent-dir/x.safetensors", {}, {}).ok());
}

TEST(SafetensorsTest, MissingFileIsNotFound) {
  auto file = SafetensorsFile::Open(TempPath("does_not_exist.safetensors"));
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(file.status().message(), HasSubstr("does_not_exist"));
}

struct CorruptCase {
  const char* label;
  std::string bytes;
  const char* expected;
};

TEST(SafetensorsTest, CorruptFilesFailWithPreciseMessages) {
  const std::string ok_entry =
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string two = FloatBytes({1.0f, 2.0f});
  std::string huge_len(8, '\0');
  const uint64_t big = 1ull << 40;
  std::memcpy(huge_len.data(), &big, 8);
  const std::vector<CorruptCase> cases = {
      {"empty", "", "truncated: 0 bytes"},
      {"short", "abc", "truncated: 3 bytes"},
      {"huge header", huge_len + "{}", "exceeds the limit"},
      {"header past end", Craft("{}", "").substr(0, 8) + "{",
       "header length field says 2 bytes but only 1"},
      {"bad json", Craft("{\"a\":", ""), "not valid JSON"},
      {"not object", Craft("[1,2]", ""), "not a JSON object"},
      {"entry not object", Craft(R"({"a":3})", ""), "\"a\" is not a JSON"},
      {"no dtype", Craft(R"({"a":{"shape":[],"data_offsets":[0,4]}})", two),
       "has no \"dtype\""},
      {"no offsets", Craft(R"({"a":{"dtype":"F32","shape":[]}})", two),
       "has no \"data_offsets\""},
      {"bad dtype",
       Craft(R"({"a":{"dtype":"F8","shape":[2],"data_offsets":[0,8]}})", two),
       "unsupported safetensors dtype \"F8\""},
      {"negative dim",
       Craft(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", two),
       "negative dimension"},
      {"reversed offsets",
       Craft(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", two),
       "end before begin"},
      {"size mismatch",
       Craft(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", two),
       "needs 12 bytes but data_offsets span 8"},
      {"truncated data", Craft("{" + ok_entry + "}", two.substr(0, 6)),
       "truncated: tensor \"a\" ends at data byte 8 but the data section has "
       "only 6"},
      {"trailing", Craft("{" + ok_entry + "}", two + "xyz"),
       "3 trailing bytes"},
      {"gap",
       Craft(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", two),
       "gap of 4 bytes"},
      {"overlap",
       Craft("{" + ok_entry +
                 R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
             two),
       "overlaps"},
      {"bad metadata", Craft(R"({"__metadata__":{"x":1}})", ""),
       "value of \"x\" is not a string"},
  };
  for (const CorruptCase& c : cases) {
    const absl::Status status = OpenStatus(c.bytes, "corrupt.safetensors");
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << c.label;
    EXPECT_THAT(status.message(), HasSubstr(c.expected)) << c.label;
    EXPECT_THAT(status.message(), HasSubstr("corrupt.safetensors")) << c.label;
  }
}

TEST(SafetensorsTest, TruncatingAWrittenFileIsDetected) {
  const std::string path = TempPath("trunc.safetensors");
  std::vector<TensorData> tensors;
  tensors.push_back({{"x", DType::kF32, {4}}, AsBytes<float>({1, 2, 3, 4})});
  ASSERT_TRUE(WriteSafetensors(path, tensors, {}).ok());
  const std::string bytes = ReadBytes(path);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    const absl::Status s = OpenStatus(bytes.substr(0, cut), "cut.safetensors");
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << "cut at " << cut;
  }
}

TEST(SafetensorsTest, RandomCorruptionNeverCrashes) {
  const std::string path = TempPath("fuzz_base.safetensors");
  std::vector<TensorData> tensors;
  tensors.push_back(
      {{"x", DType::kF32, {3, 2}}, AsBytes<float>({1, 2, 3, 4, 5, 6})});
  tensors.push_back({{"y", DType::kI64, {}}, AsBytes<int64_t>({9})});
  ASSERT_TRUE(WriteSafetensors(path, tensors, {{"m", "n"}}).ok());
  const std::string base = ReadBytes(path);
  std::mt19937_64 rng(std::random_device{}());
  for (int iter = 0; iter < 500; ++iter) {
    std::string bytes = base;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    auto file = [&] {
      const std::string p = TempPath("fuzz.safetensors");
      WriteBytes(p, bytes);
      return SafetensorsFile::Open(p);
    }();
    if (!file.ok()) continue;
    // Whatever opened must describe in-bounds, size-consistent views.
    for (const std::string& name : (*file)->names()) {
      const TensorView* v = (*file)->Find(name);
      ASSERT_NE(v, nullptr);
      EXPECT_EQ(static_cast<int64_t>(v->bytes.size()),
                v->num_elements() * DTypeSize(v->dtype));
    }
  }
}

TEST(SafetensorsTest, ValidateListsEveryProblem) {
  const std::string path = TempPath("validate.safetensors");
  std::vector<TensorData> tensors;
  tensors.push_back({{"conv.weight", DType::kF32, {2, 3}},
                     AsBytes<float>({1, 2, 3, 4, 5, 6})});
  tensors.push_back({{"bn.weight", DType::kF64, {1}}, AsBytes<double>({1.0})});
  tensors.push_back({{"extra", DType::kF32, {1}}, AsBytes<float>({1})});
  tensors.push_back(
      {{"bn.num_batches_tracked", DType::kI64, {}}, AsBytes<int64_t>({0})});
  ASSERT_TRUE(WriteSafetensors(path, tensors, {}).ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();

  const std::vector<TensorSpec> expected = {
      {"conv.weight", DType::kF32, {3, 2}},
      {"bn.weight", DType::kF32, {1}},
      {"bn.bias", DType::kF32, {1}},
  };
  const absl::Status s =
      (*file)->Validate(expected, {"bn.num_batches_tracked"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("1 missing tensor(s): bn.bias"));
  EXPECT_THAT(s.message(),
              HasSubstr("conv.weight is F32[2,3], expected F32[3,2]"));
  EXPECT_THAT(s.message(), HasSubstr("bn.weight is F64[1], expected F32[1]"));
  EXPECT_THAT(s.message(), HasSubstr("1 unexpected tensor(s): extra"));
  EXPECT_THAT(s.message(), Not(HasSubstr("num_batches_tracked")));

  // Without the ignore list, num_batches_tracked is unexpected too.
  EXPECT_THAT((*file)->Validate(expected).message(),
              HasSubstr("2 unexpected tensor(s): bn.num_batches_tracked, "
                        "extra"));

  const std::vector<TensorSpec> exact = {
      {"conv.weight", DType::kF32, {2, 3}},
      {"bn.weight", DType::kF64, {1}},
      {"extra", DType::kF32, {1}},
  };
  EXPECT_TRUE((*file)->Validate(exact, {"bn.num_batches_tracked"}).ok());
}

TEST(SafetensorsTest, DTypeNamesRoundTrip) {
  for (const char* name :
       {"F32", "F64", "F16", "BF16", "I64", "I32", "I8", "U8", "BOOL"}) {
    auto dtype = ParseDType(name);
    ASSERT_TRUE(dtype.ok()) << name;
    EXPECT_EQ(DTypeName(*dtype), name);
  }
  EXPECT_EQ(DTypeSize(DType::kBF16), 2);
  EXPECT_EQ(DTypeSize(DType::kF64), 8);
  EXPECT_FALSE(ParseDType("f32").ok());
}

}  // namespace
}  // namespace diarization::models
