#include "clients/cli/channel_config.h"

#include "absl/strings/str_cat.h"

namespace diarization::client {

std::string RoundRobinServiceConfig() {
  return absl::StrCat(R"json({
  "loadBalancingConfig": [{"round_robin": {}}],
  "healthCheckConfig": {"serviceName": ")json",
                      kHealthServiceName, R"json("},
  "methodConfig": [{
    "name": [{"service": "diarization.v1.Diarization"}],
    "retryPolicy": {
      "maxAttempts": 4,
      "initialBackoff": "0.1s",
      "maxBackoff": "1s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
})json");
}

absl::StatusOr<std::string> ServiceConfigFor(
    const std::string& lb_policy, const std::string& service_config) {
  if (!service_config.empty()) return service_config;
  if (lb_policy.empty() || lb_policy == "pick_first") return std::string();
  if (lb_policy == "round_robin") return RoundRobinServiceConfig();
  return absl::InvalidArgumentError(
      absl::StrCat("--lb_policy is '", lb_policy,
                   "'; use round_robin or pick_first (or give "
                   "--service_config JSON)"));
}

}  // namespace diarization::client
