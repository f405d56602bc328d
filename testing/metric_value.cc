#include "testing/metric_value.h"

#include "prometheus/metric_family.h"

namespace diarization::testing {

double MetricValue(const prometheus::Registry& registry,
                   const std::string& name,
                   const std::map<std::string, std::string>& labels,
                   const std::string& field) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name) continue;
    double total = 0.0;
    for (const prometheus::ClientMetric& m : family.metric) {
      bool match = true;
      for (const auto& [k, v] : labels) {
        bool has = false;
        for (const auto& l : m.label) has |= (l.name == k && l.value == v);
        match &= has;
      }
      if (!match) continue;
      if (family.type == prometheus::MetricType::Counter) {
        total += m.counter.value;
      } else if (family.type == prometheus::MetricType::Gauge) {
        total += m.gauge.value;
      } else if (family.type == prometheus::MetricType::Histogram) {
        total += field == "count" ? m.histogram.sample_count
                                  : m.histogram.sample_sum;
      }
    }
    return total;
  }
  return 0.0;
}

}  // namespace diarization::testing
