#include "engine/models/cuda/segmentation/cuda_segmentation_layout.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/shapes.h"
#include "engine/models/format/model_specs.h"

namespace diarization::models {
namespace {

using HP = PyanNetHyperParameters;
constexpr PyanNetLengths kLengths = PyanNetSincNetLengths(kWindowSamples);
constexpr size_t kGateFloats = size_t{2} * 4 * HP::kLstmHidden;  // 1024

constexpr std::array<const char*, kSegTensorCount> kNames = {
    "staging", "audio",   "normed", "pool0", "pool1", "pool2",
    "seq",     "gates",   "lstm0",  "lstm1", "lstm2", "lstm3",
    "linear0", "linear1", "logits", "out"};

constexpr int I(SegTensor t) { return static_cast<int>(t); }

size_t RoundUp(size_t v, size_t m) { return (v + m - 1) / m * m; }

std::string MiB(size_t b) { return absl::StrFormat("%.1f MiB", b / 1048576.0); }

}  // namespace

std::string_view SegTensorName(SegTensor t) { return kNames[I(t)]; }

size_t SegTensorFloats(SegTensor t) {
  constexpr size_t kSinc = HP::kSincFilters, kConv = HP::kConvChannels,
                   kFrames = kFramesPerWindow;
  switch (t) {
    case SegTensor::kStaging:  // the uploader's capacity per window
    case SegTensor::kAudio:
    case SegTensor::kNormed:
      return kWindowSamples;
    case SegTensor::kPool0:
      return kSinc * kLengths.pool0;
    case SegTensor::kPool1:
      return kConv * kLengths.pool1;
    case SegTensor::kPool2:
    case SegTensor::kSeq:
      return kConv * kFrames;
    case SegTensor::kGates:
      return kFrames * kGateFloats;
    case SegTensor::kLstmOut0:
    case SegTensor::kLstmOut1:
    case SegTensor::kLstmOut2:
    case SegTensor::kLstmOut3:
      return kFrames * 2 * HP::kLstmHidden;
    case SegTensor::kLinear0:
    case SegTensor::kLinear1:
      return kFrames * HP::kLinearHidden;
    case SegTensor::kLogits:
    case SegTensor::kOut:
      return kFrames * kPowersetClasses;
  }
  return 0;
}

std::vector<SegStep> SegmentationSchedule() {
  using T = SegTensor;
  std::vector<SegStep> s;
  s.push_back({"upload: covering audio to the device", {}, {T::kStaging}});
  s.push_back({"upload: window gather", {T::kStaging}, {T::kAudio}});
  s.push_back({"waveform InstanceNorm", {T::kAudio}, {T::kNormed}});
  s.push_back({"sinc conv + |.| + max-pool", {T::kNormed}, {T::kPool0}});
  s.push_back({"InstanceNorm 0 (in place)", {T::kPool0}, {T::kPool0}});
  s.push_back({"conv 1 + max-pool 1 + bias", {T::kPool0}, {T::kPool1}});
  s.push_back({"InstanceNorm 1 (in place)", {T::kPool1}, {T::kPool1}});
  s.push_back({"conv 2 + max-pool 2 + bias", {T::kPool1}, {T::kPool2}});
  s.push_back({"InstanceNorm 2, transposed", {T::kPool2}, {T::kSeq}});
  constexpr T kOuts[] = {T::kLstmOut0, T::kLstmOut1, T::kLstmOut2,
                         T::kLstmOut3};
  static_assert(std::size(kOuts) == HP::kLstmLayers);
  for (int l = 0; l < HP::kLstmLayers; ++l) {
    const T in = l == 0 ? T::kSeq : kOuts[l - 1];
    // One GEMM with the bias in its epilogue (cuda_linear.h); where a shape
    // falls back to broadcast + GEMM, the gates are written and re-read
    // within this step, while the layer's input is live, all the same.
    s.push_back({"LSTM input projection GEMM + bias", {in}, {T::kGates}});
    s.push_back({"LSTM recurrence", {T::kGates}, {kOuts[l]}});
  }
  s.push_back({"linear 0 + LeakyReLU", {T::kLstmOut3}, {T::kLinear0}});
  s.push_back({"linear 1 + LeakyReLU", {T::kLinear0}, {T::kLinear1}});
  s.push_back({"classifier", {T::kLinear1}, {T::kLogits}});
  s.push_back({"log-softmax", {T::kLogits}, {T::kOut}});
  return s;
}

absl::StatusOr<SegmentationActivationLayout> SegmentationActivationLayout::Plan(
    std::string_view mode, int max_batch) {
  if (max_batch < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segmentation activation layout: max_batch ", max_batch, " < 1"));
  }
  if (mode != "packed" && mode != "separate") {
    return absl::InvalidArgumentError(
        absl::StrCat("segmentation activations must be packed or separate, "
                     "not '",
                     std::string(mode), "'"));
  }
  SegmentationActivationLayout L;
  L.mode_ = std::string(mode);
  L.max_batch_ = max_batch;
  const std::vector<SegStep> steps = SegmentationSchedule();
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    for (const auto* list : {&steps[i].reads, &steps[i].writes}) {
      for (SegTensor t : *list) {
        Slot& s = L.slots_[I(t)];
        if (!s.used) {
          s.used = true;
          s.first = i;
          s.bytes = RoundUp(sizeof(float) * SegTensorFloats(t) *
                                static_cast<size_t>(max_batch),
                            kAlignment);
        }
        s.last = i;
      }
    }
  }
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    size_t live = 0;
    for (const Slot& s : L.slots_) {
      if (s.used && s.first <= i && i <= s.last) live += s.bytes;
    }
    L.peak_live_bytes_ = std::max(L.peak_live_bytes_, live);
  }
  auto together = [&](int a, int b) {
    const Slot &x = L.slots_[a], &y = L.slots_[b];
    return x.first <= y.last && y.first <= x.last;
  };
  // The upload and the download address the buffer from its start.
  Slot& audio = L.slots_[I(SegTensor::kAudio)];
  Slot& out = L.slots_[I(SegTensor::kOut)];
  audio.offset = out.offset = 0;
  const size_t front = std::max(audio.bytes, out.bytes);
  std::vector<int> order;
  for (int t = 0; t < kSegTensorCount; ++t) {
    if (L.slots_[t].used && t != I(SegTensor::kAudio) &&
        t != I(SegTensor::kOut)) {
      order.push_back(t);
    }
  }
  if (mode == "separate") {
    size_t at = front;
    for (int t : order) {
      L.slots_[t].offset = at;
      at += L.slots_[t].bytes;
    }
  } else {  // packed
    std::vector<int> placed = {I(SegTensor::kAudio), I(SegTensor::kOut)};
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return L.slots_[a].bytes > L.slots_[b].bytes;
    });
    for (int t : order) {
      // Ranges of the placed tensors live with t, by offset.
      std::vector<std::pair<size_t, size_t>> taken;
      for (int p : placed) {
        if (together(t, p)) {
          taken.push_back(
              {L.slots_[p].offset, L.slots_[p].offset + L.slots_[p].bytes});
        }
      }
      std::sort(taken.begin(), taken.end());
      size_t at = 0;
      for (const auto& [begin, end] : taken) {
        if (at + L.slots_[t].bytes <= begin) break;
        at = std::max(at, end);
      }
      L.slots_[t].offset = at;
      placed.push_back(t);
    }
  }
  for (const Slot& s : L.slots_) {
    if (s.used) L.total_bytes_ = std::max(L.total_bytes_, s.offset + s.bytes);
  }
  if (absl::Status v = L.Validate(); !v.ok()) return v;
  return L;
}

absl::Status SegmentationActivationLayout::Validate() const {
  for (int a = 0; a < kSegTensorCount; ++a) {
    const Slot& x = slots_[a];
    if (!x.used) continue;
    if (x.offset % kAlignment != 0 || x.offset + x.bytes > total_bytes_) {
      return absl::InternalError(absl::StrCat(
          "segmentation activation layout '", mode_, "': ", kNames[a], " at ",
          x.offset, " (", x.bytes, " bytes) is misaligned or outside ", "the ",
          total_bytes_, "-byte buffer"));
    }
    for (int b = a + 1; b < kSegTensorCount; ++b) {
      const Slot& y = slots_[b];
      if (!y.used || x.first > y.last || y.first > x.last) continue;
      if (x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes) {
        return absl::InternalError(absl::StrCat(
            "segmentation activation layout '", mode_, "': ", kNames[a],
            " and ", kNames[b],
            " are live at the same step but overlap in the buffer"));
      }
    }
  }
  return absl::OkStatus();
}

std::string SegmentationActivationLayout::Describe() const {
  std::string s = absl::StrFormat(
      "activations (%s layout): %s for %d windows (%.2f MiB per window; live "
      "peak %s):",
      mode_, MiB(total_bytes_), max_batch_,
      total_bytes_ / 1048576.0 / max_batch_, MiB(peak_live_bytes_));
  for (int t = 0; t < kSegTensorCount; ++t) {
    if (!slots_[t].used) continue;
    absl::StrAppend(&s, " ", kNames[t], " ", MiB(slots_[t].bytes), " @",
                    MiB(slots_[t].offset), t + 1 < kSegTensorCount ? "," : "");
  }
  return s;
}

}  // namespace diarization::models
