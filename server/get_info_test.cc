// GetInfo names no host paths: WithoutHostPaths on model sources.
#include "server/get_info.h"

#include "gtest/gtest.h"

namespace diarization::server {
namespace {

TEST(WithoutHostPaths, KeepsOnlyTheLastComponentOfAbsolutePaths) {
  const struct {
    const char* in;
    const char* out;
  } cases[] = {
      {"converted by tools/convert/convert.py from pytorch_model.bin "
       "(sha256 ab12)",
       "converted by tools/convert/convert.py from pytorch_model.bin "
       "(sha256 ab12)"},
      {"converted from /home/alice/models/pytorch_model.bin (sha256 ab12)",
       "converted from pytorch_model.bin (sha256 ab12)"},
      {"from (/srv/weights/seg.ckpt), then ~/x/y.npz and C:\\w\\e.bin.",
       "from (seg.ckpt), then y.npz and e.bin."},
      {"path='/etc/secret/plda.npz';", "path='plda.npz';"},
      {"/", ""},
      {"", ""},
      {"  two  spaces ", "  two  spaces "},
      {"random weights, seed 11: NOT a trained model",
       "random weights, seed 11: NOT a trained model"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(WithoutHostPaths(c.in), c.out) << c.in;
  }
}

}  // namespace
}  // namespace diarization::server
