// A second set of pyannote whole-pipeline recordings
// (testing/testdata/pipeline_real_segmentation, tools/reference/
// record_pipeline.py): pyannote.audio 4.0.4's SpeakerDiarization with the
// community-1 configuration, real segmentation-3.0 and a random (seed-1)
// embedding network on findit 02–05. From its recorded segmentations and
// embeddings, our host pipeline must write the same regular AND exclusive
// RTTMs (the exclusive view has no other reference).
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/io/plda_files.h"
#include "engine/pipeline/diarization.h"
#include "engine/pipeline/rttm.h"
#include "gtest/gtest.h"
#include "testing/pipeline_recording.h"
#include "testing/test_data.h"

namespace diarization::pipeline {
namespace {

std::string Dir() {
  return diarization::testing::PipelineRecordingDir(
             "pipeline_real_segmentation") +
         "/";
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

class PipelineReferenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PipelineReferenceTest, RegularAndExclusiveRttmMatchPyannote) {
  const std::string clip = GetParam();
  // The reader fails when the file, a tensor, or the U8 dtype is missing.
  auto recorded = diarization::testing::ReadRecordedNetworkOutputs(Dir(), clip);
  ASSERT_TRUE(recorded.ok()) << recorded.status();
  const int windows = recorded->num_windows;
  const std::vector<float>& segmentations = recorded->segmentations;
  const std::vector<float>& embeddings = recorded->embeddings;
  ASSERT_EQ(static_cast<int64_t>(embeddings.size()),
            int64_t{windows} * 3 * 256);

  auto plda = io::LoadPlda(diarization::testing::SharedModelsDir() +
                           "/community-1-plda");
  ASSERT_TRUE(plda.ok()) << plda.status();
  auto out = Diarize(segmentations, embeddings, windows, *plda,
                     PipelineConfig{}, SpeakerHints{});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(FormatRttm(out->segments, clip, 3),
            ReadText(Dir() + clip + ".rttm"));
  EXPECT_EQ(FormatRttm(out->exclusive_segments, clip, 3),
            ReadText(Dir() + clip + ".exclusive.rttm"));
}

INSTANTIATE_TEST_SUITE_P(FinditClips, PipelineReferenceTest,
                         ::testing::Values("02_pyannote_sample",
                                           "03_dual_speaker",
                                           "04_three_speaker",
                                           "05_four_speaker"));

}  // namespace
}  // namespace diarization::pipeline
