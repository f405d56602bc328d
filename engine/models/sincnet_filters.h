// SincNet's parametric band-pass filters (asteroid-filterbanks ParamSincFB,
// ../shared/specs/models.md §1.1), computed once at load time in float32
// with asteroid's op order, from the checkpoint's low_hz_, band_hz_ and its
// window_ and n_ buffers. Shared by every backend.
#ifndef DIARIZATION_ENGINE_MODELS_SINCNET_FILTERS_H_
#define DIARIZATION_ENGINE_MODELS_SINCNET_FILTERS_H_

#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/models/format/model_specs.h"

namespace diarization::models {

// segmentation-3.0's SincNet sizes (model_specs.h), by their short names.
inline constexpr int kSincBands = PyanNetHyperParameters::kSincBands;
inline constexpr int kSincFilters = PyanNetHyperParameters::kSincFilters;
inline constexpr int kSincKernel = PyanNetHyperParameters::kSincKernel;
inline constexpr int kSincHalfKernel = PyanNetHyperParameters::kSincHalfKernel;

// low_hz, band_hz: 40 each; window, n: 125 each. Returns (80, 251)
// row-major: 40 cosine filters, then 40 sine filters. InvalidArgument on
// wrong sizes or a zero band (division by zero in the normalisation).
absl::StatusOr<std::vector<float>> ComputeSincFilters(
    std::span<const float> low_hz, std::span<const float> band_hz,
    std::span<const float> window, std::span<const float> n);

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_SINCNET_FILTERS_H_
