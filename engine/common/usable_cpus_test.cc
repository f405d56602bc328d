#include "engine/common/usable_cpus.h"

#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace diarization {
namespace {

TEST(UsableCpusTest, CgroupV2MaxFormats) {
  EXPECT_EQ(CpusFromCgroupV2Max("max 100000\n"), std::nullopt);
  EXPECT_EQ(CpusFromCgroupV2Max("400000 100000\n"), 4);
  EXPECT_EQ(CpusFromCgroupV2Max("150000 100000"), 2);  // 1.5 CPUs: round up
  EXPECT_EQ(CpusFromCgroupV2Max("50000 100000"), 1);
  EXPECT_EQ(CpusFromCgroupV2Max(""), std::nullopt);
  EXPECT_EQ(CpusFromCgroupV2Max("400000"), std::nullopt);
  EXPECT_EQ(CpusFromCgroupV2Max("a b"), std::nullopt);
  EXPECT_EQ(CpusFromCgroupV2Max("400000 0"), std::nullopt);
}

TEST(UsableCpusTest, CgroupV1Formats) {
  EXPECT_EQ(CpusFromCgroupV1("-1\n", "100000\n"), std::nullopt);
  EXPECT_EQ(CpusFromCgroupV1("200000\n", "100000\n"), 2);
  EXPECT_EQ(CpusFromCgroupV1("250000", "100000"), 3);
  EXPECT_EQ(CpusFromCgroupV1("x", "100000"), std::nullopt);
}

// Any quota and period: the ceiling of their ratio, at least 1.
TEST(UsableCpusTest, QuotaRoundsUpForFreshValues) {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<int64_t> period(1000, 1000000);
  std::uniform_int_distribution<int64_t> cpus_x1000(1, 256000);
  for (int i = 0; i < 200; ++i) {
    const int64_t p = period(rng);
    const int64_t q = p * cpus_x1000(rng) / 1000 + 1;
    const int64_t want = std::max<int64_t>(1, (q + p - 1) / p);
    EXPECT_EQ(CpusFromCgroupV2Max(absl::StrCat(q, " ", p)), want)
        << q << "/" << p;
    EXPECT_EQ(CpusFromCgroupV1(absl::StrCat(q), absl::StrCat(p)), want);
  }
}

TEST(UsableCpusTest, CgroupV2PathFromProcSelfCgroup) {
  EXPECT_EQ(CgroupV2Path("0::/kubepods/burstable/pod1/abc\n"),
            "/kubepods/burstable/pod1/abc");
  EXPECT_EQ(CgroupV2Path("0::/\n"), "/");
  EXPECT_EQ(CgroupV2Path("12:cpu,cpuacct:/docker/x\n11:memory:/docker/x\n"),
            std::nullopt);
  EXPECT_EQ(CgroupV2Path("12:cpu,cpuacct:/x\n0::/user.slice\n"), "/user.slice");
}

// The tightest quota on the way from the leaf to the root counts.
TEST(UsableCpusTest, CgroupV2LimitTakesTheSmallestAncestor) {
  const std::filesystem::path root =
      std::filesystem::path(
          std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") /
      absl::StrCat("cgroup_", ::getpid());
  std::filesystem::create_directories(root / "a" / "b" / "c");
  auto write = [](const std::filesystem::path& p, const std::string& text) {
    std::ofstream(p) << text;
  };
  write(root / "cpu.max", "max 100000\n");
  write(root / "a" / "cpu.max", "300000 100000\n");
  write(root / "a" / "b" / "cpu.max", "max 100000\n");
  write(root / "a" / "b" / "c" / "cpu.max", "600000 100000\n");
  EXPECT_EQ(CgroupV2Limit(root.string(), "/a/b/c"), 3);
  EXPECT_EQ(CgroupV2Limit(root.string(), "/a/b"), 3);
  EXPECT_EQ(CgroupV2Limit(root.string(), "/"), std::nullopt);
  write(root / "a" / "b" / "c" / "cpu.max", "150000 100000\n");
  EXPECT_EQ(CgroupV2Limit(root.string(), "/a/b/c"), 2);
  // A missing file (no cpu controller there) is no limit.
  EXPECT_EQ(CgroupV2Limit(root.string(), "/elsewhere"), std::nullopt);
  std::filesystem::remove_all(root);
}

// The live value: at least 1, never more than the CPUs the scheduler lets
// this process run on.
TEST(UsableCpusTest, LiveValueWithinAffinity) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int n = UsableCpus();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, CPU_COUNT(&set));
}

}  // namespace
}  // namespace diarization
