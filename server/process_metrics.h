// The standard process metrics of Prometheus client libraries
// (process_resident_memory_bytes, process_virtual_memory_bytes,
// process_cpu_seconds_total, process_open_fds, process_start_time_seconds),
// read from /proc/self at each scrape. prometheus-cpp has no process
// collector; the server registers this one beside the engine's registry so
// that host memory is visible for CPU deployments too (the engine's
// diarization_device_memory_bytes covers GPU memory only).
#ifndef DIARIZATION_SERVER_PROCESS_METRICS_H_
#define DIARIZATION_SERVER_PROCESS_METRICS_H_

#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace diarization::server {

class ProcessMetrics : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_PROCESS_METRICS_H_
