// ReadF32, the one weight reader of the CPU and CUDA backends: the values of
// a tensor of the right name, dtype and shape; NotFound / InvalidArgument
// with the tensor's name for the three ways a checkpoint can be wrong.
#include "engine/models/format/weights.h"

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diarization::models {
namespace {

using ::testing::HasSubstr;

std::vector<std::byte> Bytes(const void* data, size_t n) {
  std::vector<std::byte> b(n);
  std::memcpy(b.data(), data, n);
  return b;
}

TEST(ReadF32, ChecksNameDtypeAndShape) {
  const std::string path =
      std::filesystem::path(::testing::TempDir()) / "weights.safetensors";
  const std::vector<float> w = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  const std::vector<int32_t> ints = {1, 2};
  ASSERT_TRUE(
      WriteSafetensors(path,
                       {{{"w", DType::kF32, {2, 3}},
                         Bytes(w.data(), w.size() * sizeof(float))},
                        {{"i", DType::kI32, {2}},
                         Bytes(ints.data(), ints.size() * sizeof(int32_t))}},
                       {})
          .ok());
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();

  auto ok = ReadF32(**file, "w", {2, 3});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, w);

  auto missing = ReadF32(**file, "x", {2, 3});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("tensor 'x' missing"));

  // The same element count in another shape is refused too.
  auto shape = ReadF32(**file, "w", {3, 2});
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(shape.status().message(),
              HasSubstr("has shape [2,3], expected [3,2]"));

  auto dtype = ReadF32(**file, "i", {2});
  EXPECT_EQ(dtype.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dtype.status().message(), HasSubstr("tensor 'i'"));
  EXPECT_THAT(dtype.status().message(), HasSubstr("must be F32"));
}

}  // namespace
}  // namespace diarization::models
