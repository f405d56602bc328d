#include "engine/common/text_fields.h"

#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diarization {
namespace {

using ::testing::ElementsAre;

TEST(TextFieldsTest, SplitsOnAnyWhitespaceRun) {
  EXPECT_THAT(SplitWhitespaceFields(" a\t\tbb  c\r"),
              ElementsAre("a", "bb", "c"));
  EXPECT_TRUE(SplitWhitespaceFields(" \t\r\v\f").empty());
  EXPECT_TRUE(SplitWhitespaceFields("").empty());
}

TEST(TextFieldsTest, SplitRoundTripsRandomFields) {
  std::mt19937 rng(std::random_device{}());
  const std::string spaces = " \t\r\v\f";
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::string> want;
    std::string line;
    const int n = rng() % 8;
    for (int i = 0; i < n; ++i) {
      line.append(rng() % 3, spaces[rng() % spaces.size()]);
      if (i > 0 && line.back() != ' ') line += ' ';
      std::string field(1 + rng() % 5, 'a' + rng() % 26);
      want.push_back(field);
      line += field;
    }
    line.append(rng() % 3, '\t');
    const std::vector<std::string_view> got = SplitWhitespaceFields(line);
    ASSERT_EQ(got.size(), want.size()) << line;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]);
  }
}

TEST(TextFieldsTest, ParsesFiniteNonNegativeNumbers) {
  EXPECT_DOUBLE_EQ(*ParseNonNegativeNumber("0", "RTTM", "onset", 1), 0.0);
  EXPECT_DOUBLE_EQ(*ParseNonNegativeNumber("12.250", "RTTM", "onset", 1),
                   12.25);
  EXPECT_DOUBLE_EQ(*ParseNonNegativeNumber("1e2", "UEM", "end", 1), 100.0);
}

TEST(TextFieldsTest, ErrorsNameFormatLineAndField) {
  const struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"abc", "UEM line 7: start 'abc' is not a finite number"},
      {"1.0x", "UEM line 7: start '1.0x' is not a finite number"},
      {"", "UEM line 7: start '' is not a finite number"},
      {"inf", "UEM line 7: start 'inf' is not a finite number"},
      {"nan", "UEM line 7: start 'nan' is not a finite number"},
      {"1e999", "UEM line 7: start '1e999' is not a finite number"},
      {"-0.5", "UEM line 7: start -0.5 is negative"},
  };
  for (const auto& c : cases) {
    auto r = ParseNonNegativeNumber(c.text, "UEM", "start", 7);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), c.message);
  }
}

}  // namespace
}  // namespace diarization
