#include "engine/common/openblas_kernels.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace diarization {
namespace {

constexpr CpuVectorFeatures kAvx512{.avx2_fma = true, .avx512_skylakex = true};
constexpr CpuVectorFeatures kAvx2{.avx2_fma = true, .avx512_skylakex = false};
constexpr CpuVectorFeatures kSse{.avx2_fma = false, .avx512_skylakex = false};

TEST(OpenBlasCoreOverrideTest, ReplacesAPreAvx2FallbackOnAnAvx2Cpu) {
  EXPECT_EQ(OpenBlasCoreOverride("Prescott", kAvx512), "SkylakeX");
  EXPECT_EQ(OpenBlasCoreOverride("prescott", kAvx512), "SkylakeX");
  EXPECT_EQ(OpenBlasCoreOverride("Prescott", kAvx2), "Haswell");
  EXPECT_EQ(OpenBlasCoreOverride("Nehalem", kAvx2), "Haswell");
  EXPECT_EQ(OpenBlasCoreOverride("Sandybridge", kAvx512), "SkylakeX");
  EXPECT_EQ(OpenBlasCoreOverride("Core2", kAvx2), "Haswell");
}

TEST(OpenBlasCoreOverrideTest, KeepsTheLibrarysChoiceOtherwise) {
  for (const char* core :
       {"Haswell", "SkylakeX", "Cooperlake", "Zen", "SapphireRapids"}) {
    EXPECT_EQ(OpenBlasCoreOverride(core, kAvx512), std::nullopt) << core;
    EXPECT_EQ(OpenBlasCoreOverride(core, kAvx2), std::nullopt) << core;
  }
  // A CPU without AVX2 may well need the old kernels.
  EXPECT_EQ(OpenBlasCoreOverride("Prescott", kSse), std::nullopt);
  EXPECT_EQ(OpenBlasCoreOverride("Nehalem", kSse), std::nullopt);
}

// Runs the probe binary with `env_prefix` (an env(1) argument list) and
// returns its output.
std::string RunProbe(const std::string& env_prefix) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const std::string probe = std::string(srcdir != nullptr ? srcdir : ".") +
                            "/diarization/engine/common/openblas_kernels_probe";
  const std::string cmd =
      "env -u OPENBLAS_CORETYPE -u "
      "DIARIZATION_OPENBLAS_FALLBACK " +
      env_prefix + " '" + probe + "' first 'two words'";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int rc = pclose(p);
  if (rc != 0) out += "\nexit status " + std::to_string(rc);
  return out;
}

std::string Field(const std::string& out, const std::string& key) {
  const size_t at = out.find(key + "=");
  if (at == std::string::npos) return "";
  const size_t end = out.find('\n', at);
  return out.substr(at + key.size() + 1, end - at - key.size() - 1);
}

// The real library on this machine: after the call, a CPU with AVX2 and FMA
// never runs OpenBLAS's pre-AVX2 kernels, and the arguments survive.
TEST(ReexecWithOpenBlasKernelsTest, ThisCpuGetsKernelsForItsVectorUnits) {
  const std::string out = RunProbe("");
  SCOPED_TRACE(out);
  EXPECT_TRUE(absl::StrContains(out, "arg=first\narg=two words\n"));
  const std::string core = Field(out, "core");
  ASSERT_FALSE(core.empty());
  if (DetectCpuVectorFeatures().avx2_fma) {
    EXPECT_EQ(OpenBlasCoreOverride(core, DetectCpuVectorFeatures()),
              std::nullopt)
        << "OpenBLAS still runs its " << core << " kernels";
  }
  EXPECT_TRUE(absl::StartsWith(Field(out, "line"), "OpenBLAS kernels: " + core))
      << Field(out, "line");
}

TEST(ReexecWithOpenBlasKernelsTest, AnOperatorsCoreTypeIsKept) {
  const std::string out = RunProbe("OPENBLAS_CORETYPE=Haswell");
  SCOPED_TRACE(out);
  EXPECT_EQ(absl::AsciiStrToLower(Field(out, "core")), "haswell");
  EXPECT_EQ(Field(out, "line"), "OpenBLAS kernels: " + Field(out, "core") +
                                    " (OPENBLAS_CORETYPE=Haswell)");
  EXPECT_TRUE(absl::StrContains(out, "arg=first\narg=two words\n"));
}

}  // namespace
}  // namespace diarization
