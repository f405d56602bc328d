#include "engine/models/format/model_specs.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "testing/test_data.h"

namespace diarization::models {
namespace {

// False for buffers (SincNet window_/n_, BatchNorm running statistics and
// num_batches_tracked), true for learnable parameters (the published
// parameter counts of models.md §5 count only these).
bool IsLearnableParameter(std::string_view name) {
  for (std::string_view buffer : {".window_", ".n_", ".running_mean",
                                  ".running_var", ".num_batches_tracked"}) {
    if (name.ends_with(buffer)) return false;
  }
  return true;
}

// Sum of element counts of the learnable tensors among `specs`.
int64_t CountLearnableParameters(const std::vector<TensorSpec>& specs) {
  int64_t total = 0;
  for (const TensorSpec& spec : specs) {
    if (!IsLearnableParameter(spec.name)) continue;
    int64_t n = 1;
    for (int64_t d : spec.shape) n *= d;
    total += n;
  }
  return total;
}

int64_t Elements(const std::vector<TensorSpec>& specs) {
  int64_t total = 0;
  for (const TensorSpec& s : specs) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    total += n;
  }
  return total;
}

// Listing written by tools/reference/pyannote_models.py from pyannote's own
// modules' state_dict(): "name dtype shape" per line, in state_dict order.
std::string Listing(const std::vector<TensorSpec>& specs) {
  std::ostringstream out;
  for (const TensorSpec& s : specs) {
    out << s.name << " " << DTypeName(s.dtype) << " "
        << (s.shape.empty() ? "-" : absl::StrJoin(s.shape, ",")) << "\n";
  }
  return out.str();
}

std::string ReadTestdata(const std::string& name) {
  const auto path = std::filesystem::path(testing::SourceRoot()) /
                    "engine/models/testdata" / name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "missing " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// models.md §5: totals computed from the published layer tables.
TEST(ModelSpecsTest, PyanNetCountsMatchTheSpec) {
  const auto& specs = PyanNetTensorSpecs();
  EXPECT_EQ(specs.size(), 54u);
  EXPECT_EQ(CountLearnableParameters(specs), 1'473'265);
  EXPECT_EQ(Elements(specs), 1'473'515);
}

TEST(ModelSpecsTest, ResNet34CountsMatchTheSpec) {
  const auto& specs = ResNet34TensorSpecs();
  EXPECT_EQ(specs.size(), 218u);
  EXPECT_EQ(CountLearnableParameters(specs), 6'634'336);
  EXPECT_EQ(Elements(specs), 6'642'884);
}

TEST(ModelSpecsTest, PyanNetMatchesPyannoteStateDict) {
  EXPECT_EQ(Listing(PyanNetTensorSpecs()),
            ReadTestdata("pyannet_state_dict.txt"));
}

TEST(ModelSpecsTest, ResNet34MatchesPyannoteStateDict) {
  EXPECT_EQ(Listing(ResNet34TensorSpecs()),
            ReadTestdata("resnet34_state_dict.txt"));
}

TEST(ModelSpecsTest, BuffersAreNotLearnable) {
  EXPECT_FALSE(IsLearnableParameter("sincnet.conv1d.0.filterbank.window_"));
  EXPECT_FALSE(IsLearnableParameter("sincnet.conv1d.0.filterbank.n_"));
  EXPECT_FALSE(IsLearnableParameter("resnet.bn1.running_var"));
  EXPECT_FALSE(IsLearnableParameter("resnet.bn1.num_batches_tracked"));
  EXPECT_TRUE(IsLearnableParameter("sincnet.conv1d.0.filterbank.low_hz_"));
  EXPECT_TRUE(IsLearnableParameter("resnet.bn1.weight"));
  EXPECT_TRUE(IsLearnableParameter("lstm.weight_hh_l3_reverse"));
}

}  // namespace
}  // namespace diarization::models
