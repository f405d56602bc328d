// The shapes every module agrees on: pyannote speaker-diarization-community-1
// (segmentation-3.0 + WeSpeaker ResNet34; ../shared/specs/models.md,
// pipeline.md §0). One home for each number; the modules that hold a second
// copy because they may not include this file (kernels/) or because the
// number is a network hyper-parameter (engine/models/format/model_specs.h) are
// tied to it by static_asserts there (ADR 0069).
#ifndef DIARIZATION_ENGINE_COMMON_SHAPES_H_
#define DIARIZATION_ENGINE_COMMON_SHAPES_H_

#include <cstdint>

namespace diarization {

// Audio: 16 kHz mono float32 in [-1, 1], everywhere after decoding.
inline constexpr int kSampleRateHz = 16000;

// A window (pyannote's "chunk"): 10 s, the segmentation model's input.
inline constexpr int kWindowSeconds = 10;
inline constexpr int kWindowSamples = kWindowSeconds * kSampleRateHz;
// Between window starts: community-1's 1 s (ACCURATE); FAST uses 2 s.
inline constexpr int64_t kDefaultStepSamples = kSampleRateHz;
inline constexpr int64_t kFastStepSamples = 2 * kSampleRateHz;

// Segmentation output per window: kFramesPerWindow frames on a grid of
// kFrameStepSamples (the product of PyanNet's strides, 10·3·3·3), each
// covering kFrameDurationSamples (its receptive field); SlidingWindow
// start 0.
inline constexpr int kFramesPerWindow = 589;
inline constexpr int kFrameStepSamples = 270;
inline constexpr int kFrameDurationSamples = 991;
// pyannote's values in seconds (the same numbers, divided by the rate).
inline constexpr double kFrameStepS = 0.016875;
inline constexpr double kFrameDurationS = 0.0619375;
static_assert(kFrameStepS == double{kFrameStepSamples} / kSampleRateHz);
static_assert(kFrameDurationS == double{kFrameDurationSamples} / kSampleRateHz);

// Powerset: 3 local speakers per window, at most 2 at once, so the classes
// are {}, {0}, {1}, {2}, {0,1}, {0,2}, {1,2}.
inline constexpr int kLocalSpeakers = 3;
inline constexpr int kMaxSpeakersPerFrame = 2;
inline constexpr int kPowersetClasses = 7;
static_assert(kMaxSpeakersPerFrame == 2 &&
              kPowersetClasses ==
                  1 + kLocalSpeakers +
                      kLocalSpeakers * (kLocalSpeakers - 1) / 2);

// Embedding: WeSpeaker fbank mel bins (the ResNet's input rows) and the
// embedding size (one per local speaker and window).
inline constexpr int kFbankMelBins = 80;
inline constexpr int kEmbeddingDim = 256;

}  // namespace diarization

#endif  // DIARIZATION_ENGINE_COMMON_SHAPES_H_
