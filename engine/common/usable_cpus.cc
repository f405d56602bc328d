#include "engine/common/usable_cpus.h"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace diarization {
namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<int> CpusFromQuota(int64_t quota, int64_t period) {
  if (quota <= 0 || period <= 0) return std::nullopt;
  return static_cast<int>(std::max<int64_t>(1, (quota + period - 1) / period));
}

// This Abseil (Debian's 20220623) has its own string_view.
absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

std::optional<int> Min(std::optional<int> a, std::optional<int> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

}  // namespace

std::optional<int> CpusFromCgroupV2Max(std::string_view cpu_max) {
  const std::vector<absl::string_view> f = absl::StrSplit(
      absl::StripAsciiWhitespace(A(cpu_max)), ' ', absl::SkipEmpty());
  if (f.size() != 2) return std::nullopt;
  int64_t quota = 0, period = 0;
  if (f[0] == "max" || !absl::SimpleAtoi(f[0], &quota) ||
      !absl::SimpleAtoi(f[1], &period)) {
    return std::nullopt;
  }
  return CpusFromQuota(quota, period);
}

std::optional<int> CpusFromCgroupV1(std::string_view quota_us,
                                    std::string_view period_us) {
  int64_t quota = 0, period = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(A(quota_us)), &quota) ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(A(period_us)), &period)) {
    return std::nullopt;
  }
  return CpusFromQuota(quota, period);  // -1: no limit
}

std::optional<std::string> CgroupV2Path(std::string_view proc_self_cgroup) {
  for (absl::string_view line : absl::StrSplit(A(proc_self_cgroup), '\n')) {
    if (absl::ConsumePrefix(&line, "0::")) {
      line = absl::StripAsciiWhitespace(line);
      if (!line.empty() && line.front() == '/') return std::string(line);
    }
  }
  return std::nullopt;
}

std::optional<int> CgroupV2Limit(const std::string& root,
                                 const std::string& path) {
  std::optional<int> limit;
  std::string p = path;
  // The leaf, then each ancestor up to the root itself.
  while (true) {
    const std::string dir = p == "/" ? root : root + p;
    if (std::optional<std::string> text = ReadFile(dir + "/cpu.max")) {
      limit = Min(limit, CpusFromCgroupV2Max(*text));
    }
    if (p == "/" || p.empty()) break;
    const size_t slash = p.rfind('/');
    p = slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
  }
  return limit;
}

int UsableCpus() {
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int affinity = CPU_COUNT(&set);
    if (affinity > 0) cpus = cpus > 0 ? std::min(cpus, affinity) : affinity;
  }
  std::optional<int> quota;
  if (std::optional<std::string> self = ReadFile("/proc/self/cgroup")) {
    if (std::optional<std::string> path = CgroupV2Path(*self)) {
      quota = CgroupV2Limit("/sys/fs/cgroup", *path);
    }
  }
  if (!quota) {
    // cgroup v1, as a container sees its own cpu controller.
    for (const char* dir :
         {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}) {
      const std::optional<std::string> q =
          ReadFile(std::string(dir) + "/cpu.cfs_quota_us");
      const std::optional<std::string> p =
          ReadFile(std::string(dir) + "/cpu.cfs_period_us");
      if (q && p) {
        quota = CpusFromCgroupV1(*q, *p);
        break;
      }
    }
  }
  if (quota) cpus = cpus > 0 ? std::min(cpus, *quota) : *quota;
  return std::max(1, cpus);
}

}  // namespace diarization
