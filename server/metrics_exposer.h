// The Prometheus HTTP endpoint (prometheus-cpp's Exposer over civetweb), with
// civetweb's own error text kept.
//
// prometheus-cpp reports a failed start as "null context when constructing
// CivetServer", which does not say why (port taken, address not local, ...).
// civetweb does say why, but only through its log_message callback; this
// wrapper installs one, puts the text into the returned status, and sends
// later civetweb errors to the server's JSON log.
#ifndef DIARIZATION_SERVER_METRICS_EXPOSER_H_
#define DIARIZATION_SERVER_METRICS_EXPOSER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "prometheus/exposer.h"

namespace diarization::server {

// Starts serving /metrics on `listen` ("host:port"; port 0 picks a free one)
// with `num_threads` HTTP threads. UNAVAILABLE with civetweb's reason when it
// cannot listen.
absl::StatusOr<std::unique_ptr<prometheus::Exposer>> StartMetricsExposer(
    const std::string& listen, int num_threads = 2);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_METRICS_EXPOSER_H_
