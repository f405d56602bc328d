// Which layer1 kernel forms a test or benchmark runs: every one
// (kConv3x3C32Tiles), or those named in the environment variable
// CONV3X3_C32_TILES (comma-separated Conv3x3C32TileName names), so that a
// form that faults the CUDA context can run in a process of its own. Kept
// apart from conv3x3_c32.h, whose bytes the qualification record hashes.
#ifndef DIARIZATION_KERNELS_CONV3X3_C32_TILES_ENV_H_
#define DIARIZATION_KERNELS_CONV3X3_C32_TILES_ENV_H_

#include <vector>

#include "absl/status/statusor.h"
#include "kernels/conv3x3_c32.h"

namespace diarization::kernels {

// InvalidArgument for an unknown name, or when the variable is set but
// names no form (an empty selection would run nothing and pass).
absl::StatusOr<std::vector<Conv3x3C32Tile>> Conv3x3C32TilesFromEnv();

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_CONV3X3_C32_TILES_ENV_H_
