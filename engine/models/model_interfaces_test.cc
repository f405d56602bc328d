// EmbeddingModel's default StartSpans / FinishSpans (model_interfaces.h):
// the batch runs inside StartSpans, its status comes from its FinishSpans,
// oldest first, and the contract's misuses are refused without running
// anything. Fresh random windows and failures each run. And
// ContiguousWindowSpans, Run's windows as spans, against hand-computed
// offsets.
#include "engine/models/model_interfaces.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::models {
namespace {

// Writes, for each window and mask, the window's first sample plus the
// mask's first weight; fails the calls whose number is in `fail`.
class CountingEmbedding : public EmbeddingModel {
 public:
  absl::Status Run(std::span<const float> windows, int batch,
                   std::span<const float> masks, int masks_per_window,
                   std::span<float> embeddings) override {
    const int call = runs++;
    if (call < static_cast<int>(fail.size()) && fail[call]) {
      return absl::UnavailableError("call " + std::to_string(call));
    }
    for (int b = 0; b < batch; ++b) {
      for (int m = 0; m < masks_per_window; ++m) {
        const size_t pair = static_cast<size_t>(b) * masks_per_window + m;
        for (int d = 0; d < kEmbeddingDim; ++d) {
          embeddings[pair * kEmbeddingDim + d] =
              windows[static_cast<size_t>(b) * kWindowSamples] +
              masks[pair * kFramesPerWindow];
        }
      }
    }
    return absl::OkStatus();
  }
  std::string precision() const override { return "fp32"; }

  int runs = 0;
  std::vector<bool> fail;
};

TEST(ContiguousWindowSpansTest, WindowsFromFirstTouchEndToEnd) {
  ASSERT_EQ(kWindowSamples, 160000);
  std::vector<float> windows(3 * 160000);
  for (size_t i = 0; i < windows.size(); ++i) windows[i] = float(i % 1000);
  const ContiguousWindowSpans contiguous(windows, 1, 2);
  const WindowSpans spans = contiguous.spans();
  EXPECT_EQ(spans.audio.data(), windows.data());
  EXPECT_EQ(spans.audio.size(), windows.size());
  ASSERT_EQ(spans.batch(), 2);
  ASSERT_EQ(spans.ends.size(), 2u);
  EXPECT_EQ(spans.starts[0], 160000);
  EXPECT_EQ(spans.ends[0], 320000);
  EXPECT_EQ(spans.starts[1], 320000);
  EXPECT_EQ(spans.ends[1], 480000);
  EXPECT_TRUE(ValidateWindowSpans(spans).ok());
  // Materialised, they are the last two windows as given.
  EXPECT_EQ(MaterializeWindows(spans),
            std::vector<float>(windows.begin() + 160000, windows.end()));
  // No windows: empty spans over the same audio.
  const ContiguousWindowSpans none(windows, 0, 0);
  EXPECT_EQ(none.spans().batch(), 0);
  EXPECT_TRUE(ValidateWindowSpans(none.spans()).ok());
}

TEST(EmbeddingModelTest, DefaultStartRunsTheBatchAndFinishReturnsItsStatus) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  CountingEmbedding model;
  EXPECT_FALSE(model.pipelined());
  const int batches = 4;
  model.fail.resize(batches);
  for (int k = 0; k < batches; ++k) model.fail[k] = rng() % 2;
  std::vector<std::vector<float>> audio(batches), masks(batches), out(batches);
  std::vector<std::vector<int64_t>> starts(batches), ends(batches);
  for (int k = 0; k < batches; ++k) {
    audio[k].resize(kWindowSamples);
    for (float& x : audio[k]) x = u(rng);
    starts[k] = {0};
    ends[k] = {kWindowSamples};
    masks[k].resize(2 * kFramesPerWindow);
    for (float& x : masks[k]) x = u(rng);
    out[k].assign(2 * kEmbeddingDim, -7.0f);
  }
  auto spans = [&](int k) {
    return WindowSpans{.audio = audio[k], .starts = starts[k], .ends = ends[k]};
  };
  // Start k + 1, then finish k, as the worker does.
  ASSERT_TRUE(model.StartSpans(spans(0), masks[0], 2, out[0]).ok());
  EXPECT_EQ(model.runs, 1);  // ran inside StartSpans
  for (int k = 1; k <= batches; ++k) {
    if (k < batches) {
      ASSERT_TRUE(model.StartSpans(spans(k), masks[k], 2, out[k]).ok());
      // A third batch in flight: refused, and nothing runs.
      const int runs = model.runs;
      const absl::Status third =
          model.StartSpans(spans(k), masks[k], 2, out[k]);
      EXPECT_EQ(third.code(), absl::StatusCode::kFailedPrecondition) << third;
      EXPECT_EQ(model.runs, runs);
    }
    const absl::Status finished = model.FinishSpans();  // batch k - 1
    if (model.fail[k - 1]) {
      EXPECT_EQ(finished.code(), absl::StatusCode::kUnavailable) << k - 1;
      EXPECT_NE(finished.message().find("call " + std::to_string(k - 1)),
                std::string::npos)
          << finished;
    } else {
      ASSERT_TRUE(finished.ok()) << finished;
      EXPECT_EQ(out[k - 1][0], audio[k - 1][0] + masks[k - 1][0]);
      EXPECT_EQ(out[k - 1][kEmbeddingDim],
                audio[k - 1][0] + masks[k - 1][kFramesPerWindow]);
    }
  }
  const absl::Status none = model.FinishSpans();
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition) << none;
}

}  // namespace
}  // namespace diarization::models
