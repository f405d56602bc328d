#include "engine/pipeline/powerset.h"

#include <vector>

#include "engine/io/npy.h"
#include "gtest/gtest.h"
#include "testing/test_data.h"

namespace diarization::pipeline {
namespace {

TEST(PowersetTest, MappingIsPyannotes) {
  auto m = io::ReadNpyFile(diarization::testing::TestDataDir() +
                           "/speakrs-fixtures/powerset_mapping_3_2.npy");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->shape, (std::vector<int64_t>{7, 3}));
  const auto v = m->ToFloat();
  for (int k = 0; k < 7; ++k) {
    for (int s = 0; s < 3; ++s) EXPECT_EQ(kPowersetMapping[k][s], v[3 * k + s]);
  }
}

TEST(PowersetTest, DecodesRecordedLogitsExactly) {
  const std::string dir =
      diarization::testing::TestDataDir() + "/speakrs-fixtures/";
  auto logits = io::ReadNpyFile(dir + "powerset_input_logits.npy");
  auto expected = io::ReadNpyFile(dir + "powerset_hard_output.npy");
  ASSERT_TRUE(logits.ok() && expected.ok());
  std::vector<float> out(589 * 3, -1.0f);
  PowersetToMultilabel(logits->ToFloat(), out);
  EXPECT_EQ(out, expected->ToFloat());
}

TEST(PowersetTest, FirstMaximumWins) {
  const std::vector<float> logp = {0,  5,  5,  0,  0,  0,  0,  // {0} before {1}
                                   -1, -1, -1, -1, -1, -1, 3};  // {1,2}
  std::vector<float> out(6);
  PowersetToMultilabel(logp, out);
  EXPECT_EQ(out, (std::vector<float>{1, 0, 0, 0, 1, 1}));
}

}  // namespace
}  // namespace diarization::pipeline
