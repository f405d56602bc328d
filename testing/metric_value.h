// Reads one figure back from a Prometheus registry (the engine's and the
// server's metric families, engine/runtime/metrics.h), for tests and
// benchmarks that check what the service counted.
#ifndef DIARIZATION_TESTING_METRIC_VALUE_H_
#define DIARIZATION_TESTING_METRIC_VALUE_H_

#include <map>
#include <string>

#include "prometheus/registry.h"

namespace diarization::testing {

// The sum over the metrics of family `name` whose labels include all of
// `labels`: a counter's or gauge's value; for a histogram its sample sum, or
// with field "count" its sample count. 0 when the family or no such metric
// exists.
double MetricValue(const prometheus::Registry& registry,
                   const std::string& name,
                   const std::map<std::string, std::string>& labels,
                   const std::string& field = "value");

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_METRIC_VALUE_H_
