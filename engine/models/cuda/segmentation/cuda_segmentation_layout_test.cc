// The segmentation activation layouts against an independent check: the
// test derives each tensor's live steps from the schedule itself and holds
// every layout to "tensors live at one step never share a byte", at fresh
// random batch sizes; sizes against the shapes of models.md §1.2 written out
// by hand; the packed layout against the lower bound the test computes.
#include "engine/models/cuda/segmentation/cuda_segmentation_layout.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diarization::models {
namespace {

using ::testing::HasSubstr;
using T = SegTensor;

constexpr size_t kAlign = 256;
size_t Round(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// Floats per window, from models.md §1.2 (5325 / 1773 / 589 pooled along
// SincNet; LSTM 2 × 128 hidden, 4 × 128 gates per direction).
size_t ReferenceFloats(T t) {
  switch (t) {
    case T::kStaging:
    case T::kAudio:
    case T::kNormed:
      return 160000;
    case T::kPool0:
      return 80 * 5325;
    case T::kPool1:
      return 60 * 1773;
    case T::kPool2:
    case T::kSeq:
      return 60 * 589;
    case T::kGates:
      return 589 * 1024;
    case T::kLstmOut0:
    case T::kLstmOut1:
    case T::kLstmOut2:
    case T::kLstmOut3:
      return 589 * 256;
    case T::kLinear0:
    case T::kLinear1:
      return 589 * 128;
    case T::kLogits:
    case T::kOut:
      return 589 * 7;
  }
  return 0;
}

struct Range {
  bool used = false;
  int first = 0, last = 0;
  size_t offset = 0, bytes = 0;
};

// Live steps from the schedule, ranges from the layout.
std::vector<Range> Ranges(const SegmentationActivationLayout& layout) {
  std::vector<Range> r(kSegTensorCount);
  const std::vector<SegStep> steps = SegmentationSchedule();
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    std::vector<T> touched = steps[i].reads;
    touched.insert(touched.end(), steps[i].writes.begin(),
                   steps[i].writes.end());
    for (T t : touched) {
      Range& x = r[static_cast<int>(t)];
      if (!x.used) x.first = i;
      x.used = true;
      x.last = i;
    }
  }
  for (int t = 0; t < kSegTensorCount; ++t) {
    if (!r[t].used) continue;
    r[t].offset = layout.offset(T(t));
    r[t].bytes = layout.bytes(T(t));
  }
  return r;
}

// "" or the first two tensors live together that share bytes, or the first
// tensor outside the buffer.
std::string Clash(const std::vector<Range>& r, size_t total) {
  for (int a = 0; a < kSegTensorCount; ++a) {
    if (!r[a].used) continue;
    if (r[a].offset % kAlign != 0 || r[a].offset + r[a].bytes > total) {
      return std::string(SegTensorName(T(a))) + " outside";
    }
    for (int b = a + 1; b < kSegTensorCount; ++b) {
      if (!r[b].used || r[a].last < r[b].first || r[b].last < r[a].first) {
        continue;
      }
      if (r[a].offset < r[b].offset + r[b].bytes &&
          r[b].offset < r[a].offset + r[a].bytes) {
        return std::string(SegTensorName(T(a))) + " / " +
               std::string(SegTensorName(T(b)));
      }
    }
  }
  return "";
}

size_t LowerBound(const std::vector<Range>& r, int steps) {
  size_t peak = 0;
  for (int i = 0; i < steps; ++i) {
    size_t live = 0;
    for (const Range& x : r) {
      if (x.used && x.first <= i && i <= x.last) live += x.bytes;
    }
    peak = std::max(peak, live);
  }
  return peak;
}

TEST(SegmentationSchedule, EveryTensorIsWrittenBeforeItIsRead) {
  std::vector<bool> written(kSegTensorCount, false);
  for (const SegStep& s : SegmentationSchedule()) {
    for (T t : s.reads) {
      EXPECT_TRUE(written[static_cast<int>(t)])
          << s.what << " reads " << SegTensorName(t);
    }
    for (T t : s.writes) written[static_cast<int>(t)] = true;
  }
  for (int t = 0; t < kSegTensorCount; ++t) {
    EXPECT_TRUE(written[t]) << SegTensorName(T(t));
  }
}

TEST(SegmentationActivationLayout, NoTwoLiveTensorsShareBytes) {
  std::mt19937 rng(std::random_device{}());
  std::vector<int> batches = {1, 2, 3, 32, 128, 256};
  for (int i = 0; i < 6; ++i) batches.push_back(1 + rng() % 512);
  for (int n : batches) {
    for (const char* mode : {"packed", "separate"}) {
      auto layout = SegmentationActivationLayout::Plan(mode, n);
      ASSERT_TRUE(layout.ok()) << layout.status();
      const std::vector<Range> r = Ranges(*layout);
      EXPECT_EQ(Clash(r, layout->total_bytes()), "") << mode << " batch " << n;
      for (int t = 0; t < kSegTensorCount; ++t) {
        EXPECT_EQ(layout->used(T(t)), r[t].used) << SegTensorName(T(t));
        if (!r[t].used) continue;
        EXPECT_EQ(layout->bytes(T(t)),
                  Round(sizeof(float) * ReferenceFloats(T(t)) * n))
            << SegTensorName(T(t));
      }
      // The upload and the download address the buffer from its start.
      EXPECT_EQ(layout->offset(T::kAudio), 0u);
      EXPECT_EQ(layout->offset(T::kOut), 0u);
      EXPECT_EQ(layout->peak_live_bytes(),
                LowerBound(r, int(SegmentationSchedule().size())));
      // The 1-D convolutions (kernels/conv1d_pool) read a pooled tensor
      // while they write the next: in no layout may the two share bytes.
      for (auto [in, out] :
           {std::pair(T::kPool0, T::kPool1), std::pair(T::kPool1, T::kPool2)}) {
        const Range &a = r[static_cast<int>(in)], &b = r[static_cast<int>(out)];
        EXPECT_TRUE(a.offset + a.bytes <= b.offset ||
                    b.offset + b.bytes <= a.offset)
            << mode << " batch " << n << ": " << SegTensorName(in) << " and "
            << SegTensorName(out) << " overlap";
      }
    }
  }
}

// The check above can fail: a tensor moved onto one live with it.
TEST(SegmentationActivationLayout, TheCheckSeesAMovedTensor) {
  auto layout = SegmentationActivationLayout::Plan("packed", 7);
  ASSERT_TRUE(layout.ok()) << layout.status();
  std::vector<Range> r = Ranges(*layout);
  ASSERT_EQ(Clash(r, layout->total_bytes()), "");
  r[static_cast<int>(T::kLstmOut0)].offset =
      r[static_cast<int>(T::kGates)].offset;
  EXPECT_EQ(Clash(r, layout->total_bytes()), "gates / lstm0");
}

TEST(SegmentationActivationLayout, Sizes) {
  std::mt19937 rng(std::random_device{}());
  const int n = 1 + rng() % 300;
  auto total = [&](const char* mode) {
    auto l = SegmentationActivationLayout::Plan(mode, n);
    EXPECT_TRUE(l.ok()) << l.status();
    return l.ok() ? l->total_bytes() : 0;
  };
  const size_t f = sizeof(float) * n;
  // The LSTM steps (gates + one layer's output) are the peak, and packed
  // meets it (pool0 and pool1, live together in the first 1-D convolution,
  // are smaller).
  EXPECT_EQ(total("packed"), Round(f * 589 * 1024) + Round(f * 589 * 256));
  size_t sum = 0;
  auto separate = SegmentationActivationLayout::Plan("separate", n);
  ASSERT_TRUE(separate.ok());
  for (int t = 0; t < kSegTensorCount; ++t) {
    if (separate->used(T(t)) && T(t) != T::kOut) sum += separate->bytes(T(t));
  }
  EXPECT_EQ(separate->total_bytes(), sum);
  std::printf("batch %d: packed %zu, separate %zu bytes\n", n, total("packed"),
              sum);
  std::printf("%s\n", separate->Describe().c_str());
  auto packed = SegmentationActivationLayout::Plan("packed", n);
  ASSERT_TRUE(packed.ok());
  std::printf("%s\n", packed->Describe().c_str());
}

TEST(SegmentationActivationLayout, RefusesBadArguments) {
  auto bad_mode = SegmentationActivationLayout::Plan("pools", 4);
  ASSERT_FALSE(bad_mode.ok());
  EXPECT_EQ(bad_mode.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_mode.status().message()),
              HasSubstr("packed or separate"));
  auto bad_batch = SegmentationActivationLayout::Plan("packed", 0);
  ASSERT_FALSE(bad_batch.ok());
  EXPECT_EQ(bad_batch.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace diarization::models
