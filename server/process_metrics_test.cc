#include "server/process_metrics.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::server {
namespace {

std::map<std::string, double> Values() {
  std::map<std::string, double> v;
  for (const auto& f : ProcessMetrics().Collect()) {
    EXPECT_EQ(f.metric.size(), 1u);
    if (f.metric.empty()) continue;
    v[f.name] = f.type == prometheus::MetricType::Counter
                    ? f.metric[0].counter.value
                    : f.metric[0].gauge.value;
  }
  return v;
}

TEST(ProcessMetrics, ResidentMemoryFollowsAnAllocation) {
  const double before = Values()["process_resident_memory_bytes"];
  EXPECT_GT(before, 1 << 20);  // a test binary holds more than 1 MiB
  // Touch 64 MiB; resident memory must grow by about that much.
  constexpr size_t kBytes = 64 << 20;
  std::unique_ptr<char[]> block(new char[kBytes]);
  for (size_t i = 0; i < kBytes; i += 4096) block[i] = static_cast<char>(i);
  const double after = Values()["process_resident_memory_bytes"];
  EXPECT_GT(after - before, 0.9 * kBytes);
  EXPECT_LT(after - before, 1.5 * kBytes);
  EXPECT_GE(Values()["process_virtual_memory_bytes"], after);
  volatile char sink = block[kBytes - 4096];
  (void)sink;
}

TEST(ProcessMetrics, OtherSeries) {
  auto v = Values();
  EXPECT_GE(v["process_open_fds"], 3);  // stdin, stdout, stderr at least
  EXPECT_GT(v["process_start_time_seconds"], 1.6e9);
  EXPECT_GE(v["process_cpu_seconds_total"], 0);
}

}  // namespace
}  // namespace diarization::server
