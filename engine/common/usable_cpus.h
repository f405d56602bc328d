// How many CPUs this process may really use: the smaller of its scheduler
// affinity (taskset, cpusets) and the CPU quota of its cgroup and every
// cgroup above it (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us` /
// `cpu.cfs_period_us`), the quota rounded up; at least 1.
//
// Why by hand: std::thread::hardware_concurrency() counts the machine's
// CPUs, so a pod limited to 4 CPUs on a 128-core node would size its thread
// pools for 128; neither the standard library nor Abseil reads cgroup
// quotas, and a few lines of file parsing are all it takes.
#ifndef DIARIZATION_ENGINE_COMMON_USABLE_CPUS_H_
#define DIARIZATION_ENGINE_COMMON_USABLE_CPUS_H_

#include <optional>
#include <string>
#include <string_view>

namespace diarization {

// The live value, read from /proc and /sys on each call (call it once at
// start-up).
int UsableCpus();

// The pieces, for tests. The Cpus* functions return the CPUs a quota allows
// (rounded up, at least 1), or nullopt where there is no limit or the text
// is not that file's format.
//   cgroup v2 cpu.max: "max 100000" (no limit) or "<quota> <period>".
std::optional<int> CpusFromCgroupV2Max(std::string_view cpu_max);
//   cgroup v1: cpu.cfs_quota_us ("-1": no limit) and cpu.cfs_period_us.
std::optional<int> CpusFromCgroupV1(std::string_view quota_us,
                                    std::string_view period_us);
// This process's cgroup v2 path from the text of /proc/self/cgroup (its
// "0::<path>" line), or nullopt (cgroup v1 only, or unparsable).
std::optional<std::string> CgroupV2Path(std::string_view proc_self_cgroup);
// The smallest limit of cgroup v2 `path` and its ancestors under `root`
// (normally /sys/fs/cgroup), from each directory's cpu.max; nullopt if none
// of them limits the CPU.
std::optional<int> CgroupV2Limit(const std::string& root,
                                 const std::string& path);

}  // namespace diarization

#endif  // DIARIZATION_ENGINE_COMMON_USABLE_CPUS_H_
