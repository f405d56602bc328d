#include "engine/pipeline/rttm.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/test_data.h"

namespace diarization {
namespace {

using ::testing::HasSubstr;

std::string ReadText(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file.good()) << "missing " << path;
  std::ostringstream out;
  out << file.rdbuf();
  return out.str();
}

TEST(FormatRttmTest, WritesPyannoteLineByConstruction) {
  const std::vector<Segment> segments = {
      {.start_s = 0.5, .end_s = 1.75, .speaker = "SPEAKER_00", .uri = "a"},
      {.start_s = 2.0004, .end_s = 3.0, .speaker = "SPEAKER_01", .uri = "a"},
  };
  EXPECT_EQ(FormatRttm(segments),
            "SPEAKER a 1 0.500 1.250 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
            "SPEAKER a 1 2.000 1.000 <NA> <NA> SPEAKER_01 <NA> <NA>\n");
  EXPECT_EQ(FormatRttm(segments, "other", 6),
            "SPEAKER other 1 0.500000 1.250000 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
            "SPEAKER other 1 2.000400 0.999600 <NA> <NA> SPEAKER_01 <NA> "
            "<NA>\n");
}

TEST(FormatRttmTest, EmptyUriIsNa) {
  const std::vector<Segment> segments = {
      {.start_s = 1.0, .end_s = 2.0, .speaker = "A"}};
  EXPECT_EQ(FormatRttm(segments),
            "SPEAKER <NA> 1 1.000 1.000 <NA> <NA> A <NA> <NA>\n");
  EXPECT_EQ(FormatRttm({}), "");
}

TEST(ParseRttmTest, ParsesFieldsAndSkipsOtherLines) {
  const std::string text =
      ";; comment\n"
      "\n"
      "# another comment\n"
      "SPKR-INFO f 1 <NA> <NA> <NA> unknown A <NA> <NA>\n"
      "SPEAKER f 1 1.5 2.25 <NA> <NA> A <NA> <NA>\r\n"
      "SPEAKER\tg 1\t0 0.125 <NA> <NA> B\n";
  absl::StatusOr<std::vector<Segment>> parsed = ParseRttm(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ(
      (*parsed)[0],
      (Segment{.start_s = 1.5, .end_s = 3.75, .speaker = "A", .uri = "f"}));
  EXPECT_EQ(
      (*parsed)[1],
      (Segment{.start_s = 0.0, .end_s = 0.125, .speaker = "B", .uri = "g"}));
}

TEST(ParseRttmTest, RoundTripIsExactAtRttmPrecision) {
  // Times that are exact at 3 decimals survive format -> parse -> format.
  std::vector<Segment> segments;
  for (int i = 0; i < 200; ++i) {
    const double start = (i * 977 % 100000) / 1000.0;
    const double duration = ((i * 37) % 5000 + 1) / 1000.0;
    segments.push_back({.start_s = start,
                        .end_s = start + duration,
                        .speaker = "SPK_" + std::to_string(i % 7),
                        .uri = "file_" + std::to_string(i % 3)});
  }
  const std::string text = FormatRttm(segments);
  absl::StatusOr<std::vector<Segment>> parsed = ParseRttm(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    EXPECT_EQ((*parsed)[i].speaker, segments[i].speaker);
    EXPECT_EQ((*parsed)[i].uri, segments[i].uri);
    EXPECT_NEAR((*parsed)[i].start_s, segments[i].start_s, 1e-12);
    EXPECT_NEAR((*parsed)[i].end_s, segments[i].end_s, 1e-12);
  }
  EXPECT_EQ(FormatRttm(*parsed), text);
}

// pyannote's own RTTM files, re-formatted, must come back byte for byte.
void ExpectReformatsExactly(const std::string& path, int decimals) {
  const std::string text = ReadText(path);
  ASSERT_FALSE(text.empty()) << path;
  absl::StatusOr<std::vector<Segment>> parsed = ParseRttm(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->empty()) << path;
  EXPECT_EQ(FormatRttm(*parsed, "", decimals), text) << path;
}

TEST(RttmGoldenTest, FinditReferencesAreThreeDecimalPyannoteLines) {
  const std::filesystem::path dir =
      std::filesystem::path(testing::TestDataDir()) / "findit-dia-parity";
  int count = 0;
  for (const char* fixture :
       {"01_dialogue", "02_pyannote_sample", "03_dual_speaker",
        "04_three_speaker", "05_four_speaker"}) {
    ExpectReformatsExactly((dir / fixture / "reference.rttm").string(), 3);
    ++count;
  }
  EXPECT_EQ(count, 5);
}

TEST(RttmGoldenTest, SpeakrsExpectedAreSixDecimalLines) {
  const std::filesystem::path dir =
      std::filesystem::path(testing::TestDataDir()) / "speakrs-fixtures";
  for (const char* name :
       {"expected.rttm", "pipeline_expected.rttm", "3speakers_expected.rttm",
        "single_speaker_expected.rttm", "short_expected.rttm"}) {
    ExpectReformatsExactly((dir / name).string(), 6);
  }
}

TEST(RttmGoldenTest, ReadRttmFileMatchesParse) {
  const std::string path = testing::TestDataDir() +
                           "/findit-dia-parity/04_three_speaker/reference.rttm";
  absl::StatusOr<std::vector<Segment>> from_file = ReadRttmFile(path);
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  absl::StatusOr<std::vector<Segment>> from_text = ParseRttm(ReadText(path));
  ASSERT_TRUE(from_text.ok());
  EXPECT_EQ(*from_file, *from_text);
  // First line of the file, read by eye.
  EXPECT_EQ(from_file->front().uri, "clip_16k");
  EXPECT_DOUBLE_EQ(from_file->front().start_s, 6.663);
  EXPECT_DOUBLE_EQ(from_file->front().end_s, 6.663 + 0.591);
  EXPECT_EQ(from_file->front().speaker, "SPEAKER_00");
}

TEST(ParseRttmErrorTest, NamesLineAndProblem) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"SPEAKER f 1 0.0 1.0 <NA> <NA> A\nSPEAKER f 1 1.0\n",
       "RTTM line 2: expected at least 8 fields"},
      {"\n\nSPEAKER f 1 abc 1.0 <NA> <NA> A\n",
       "RTTM line 3: onset 'abc' is not a finite number"},
      {"SPEAKER f 1 1.0 1.0x <NA> <NA> A\n",
       "RTTM line 1: duration '1.0x' is not a finite number"},
      {"SPEAKER f 1 -1.0 1.0 <NA> <NA> A\n",
       "RTTM line 1: onset -1.0 is negative"},
      {"SPEAKER f 1 1.0 -0.5 <NA> <NA> A\n",
       "RTTM line 1: duration -0.5 is negative"},
      {"SPEAKER f 1 nan 1 <NA> <NA> A\n", "RTTM line 1: onset 'nan'"},
      {"SPEAKER f 1 1 inf <NA> <NA> A\n", "RTTM line 1: duration 'inf'"},
      {"SPEAKER f 1 1e999 1 <NA> <NA> A\n", "RTTM line 1: onset '1e999'"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<Segment>> parsed = ParseRttm(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.message)) << c.text;
  }
}

TEST(ParseRttmErrorTest, MissingFileIsNotFound) {
  absl::StatusOr<std::vector<Segment>> parsed =
      ReadRttmFile("/nonexistent/dir/x.rttm");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(parsed.status().message(), HasSubstr("/nonexistent/dir/x.rttm"));
}

}  // namespace
}  // namespace diarization
