#include "engine/io/npy.h"

#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "testing/test_data.h"

namespace diarization::io {
namespace {

// Builds a version-1.0 .npy file by hand, as numpy.lib.format writes it.
std::string MakeNpy(const std::string& descr, const std::string& shape,
                    const void* data, size_t bytes) {
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const uint16_t len = header.size();
  out.append(reinterpret_cast<const char*>(&len), 2);
  out += header;
  out.append(static_cast<const char*>(data), bytes);
  return out;
}

TEST(NpyTest, ParsesHandMadeFloat64Matrix) {
  const double values[6] = {1.5, -2.0, 3.25, 0.0, 1e-300, 7.0};
  auto a = ParseNpy(MakeNpy("<f8", "(2, 3)", values, sizeof(values)));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype, NpyDtype::kFloat64);
  ASSERT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  const auto d = a->ToDouble();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(d[i], values[i]);
}

TEST(NpyTest, ParsesInt8AndScalar) {
  const int8_t values[3] = {-2, 0, 5};
  auto a = ParseNpy(MakeNpy("|i1", "(3,)", values, 3));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->ToInt64(), (std::vector<int64_t>{-2, 0, 5}));
  const double scalar = 0.6;
  auto s = ParseNpy(MakeNpy("<f8", "()", &scalar, 8));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->ToDouble()[0], 0.6);
}

TEST(NpyTest, RejectsBadInput) {
  const float v = 1.0f;
  EXPECT_FALSE(ParseNpy("not an npy").ok());
  EXPECT_FALSE(ParseNpy(MakeNpy(">f4", "(1,)", &v, 4)).ok());  // big endian
  EXPECT_FALSE(ParseNpy(MakeNpy("<f4", "(2,)", &v, 4)).ok());  // truncated
  EXPECT_FALSE(ParseNpy(MakeNpy("<U3", "(1,)", &v, 4)).ok());  // strings
}

TEST(NpyTest, FortranOrderIsReorderedToCOrder) {
  // [[1, 2, 3], [4, 5, 6]] stored column-major: 1 4 2 5 3 6.
  const double col_major[6] = {1, 4, 2, 5, 3, 6};
  std::string f = MakeNpy("<f8", "(2, 3)", col_major, sizeof(col_major));
  f.replace(f.find("False"), 5, "True ");
  auto a = ParseNpy(f);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->ToDouble(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(NpyTest, ReadsFixtureNpyAndNpz) {
  const std::string data = diarization::testing::TestDataDir();
  auto pi = ReadNpyFile(data + "/speakrs-fixtures/pipeline_vbx_pi.npy");
  ASSERT_TRUE(pi.ok()) << pi.status();
  ASSERT_EQ(pi->shape, (std::vector<int64_t>{2}));
  const auto p = pi->ToDouble();
  EXPECT_NEAR(p[0] + p[1], 1.0, 1e-12);  // VBx priors sum to one

  auto npz = ReadNpzFile(
      data + "/findit-dia-parity/02_pyannote_sample/segmentations.npz");
  ASSERT_TRUE(npz.ok()) << npz.status();
  const NpyArray& seg = npz->at("segmentations");
  EXPECT_EQ(seg.dtype, NpyDtype::kFloat32);
  EXPECT_EQ(seg.shape, (std::vector<int64_t>{21, 589, 3}));
  for (float v : seg.ToFloat()) ASSERT_TRUE(v == 0.0f || v == 1.0f);

  auto thr = ReadNpzMember(
      data + "/findit-dia-parity/02_pyannote_sample/ahc_state.npz",
      "threshold");
  ASSERT_TRUE(thr.ok()) << thr.status();
  EXPECT_EQ(thr->ToDouble()[0], 0.6);
  EXPECT_FALSE(
      ReadNpzMember(
          data + "/findit-dia-parity/02_pyannote_sample/ahc_state.npz", "nope")
          .ok());
  EXPECT_FALSE(ReadNpzFile("/nonexistent.npz").ok());
}

}  // namespace
}  // namespace diarization::io
