#include "server/process_metrics.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace diarization::server {
namespace {

prometheus::MetricFamily Gauge(
    const char* name, const char* help, double value,
    prometheus::MetricType type = prometheus::MetricType::Gauge) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(m);
  return f;
}

// Fields of /proc/self/stat after the command name (which may hold spaces,
// so parsing starts after its closing parenthesis). Index 0 is field 3.
std::vector<std::string> StatFields() {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  std::vector<std::string> fields;
  if (close == std::string::npos) return fields;
  std::istringstream rest(text.substr(close + 2));
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

double BootTimeSeconds() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  }
  return 0;
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessMetrics::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  const std::vector<std::string> f = StatFields();
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  // utime = field 14, stime = 15, starttime = 22, vsize = 23, rss = 24.
  if (f.size() > 21 && ticks > 0) {
    out.push_back(Gauge("process_cpu_seconds_total",
                        "Total user and system CPU time spent in seconds.",
                        (std::stod(f[11]) + std::stod(f[12])) / ticks,
                        prometheus::MetricType::Counter));
    out.push_back(Gauge("process_start_time_seconds",
                        "Start time of the process since unix epoch in "
                        "seconds.",
                        BootTimeSeconds() + std::stod(f[19]) / ticks));
    out.push_back(Gauge("process_virtual_memory_bytes",
                        "Virtual memory size in bytes.", std::stod(f[20])));
    out.push_back(Gauge("process_resident_memory_bytes",
                        "Resident memory size in bytes.",
                        std::stod(f[21]) * page));
  }
  std::error_code ec;
  double fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++fds;
  }
  out.push_back(
      Gauge("process_open_fds", "Number of open file descriptors.", fds));
  return out;
}

}  // namespace diarization::server
