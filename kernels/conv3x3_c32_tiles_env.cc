#include "kernels/conv3x3_c32_tiles_env.h"

#include <cstdlib>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace diarization::kernels {

absl::StatusOr<std::vector<Conv3x3C32Tile>> Conv3x3C32TilesFromEnv() {
  const char* env = std::getenv("CONV3X3_C32_TILES");
  if (env == nullptr) {
    return std::vector<Conv3x3C32Tile>(std::begin(kConv3x3C32Tiles),
                                       std::end(kConv3x3C32Tiles));
  }
  std::vector<Conv3x3C32Tile> out;
  for (const absl::string_view name :
       absl::StrSplit(env, ',', absl::SkipEmpty())) {
    const absl::StatusOr<Conv3x3C32Tile> tile =
        Conv3x3C32TileFromName(std::string(name));
    if (!tile.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("CONV3X3_C32_TILES: ", tile.status().message()));
    }
    out.push_back(*tile);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CONV3X3_C32_TILES='", env, "' names no tile form"));
  }
  return out;
}

}  // namespace diarization::kernels
