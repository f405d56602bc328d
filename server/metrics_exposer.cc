#include "server/metrics_exposer.h"

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "CivetServer.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "server/request_log.h"

namespace diarization::server {
namespace {

// civetweb's callback carries no pointer of ours, and the exposer is built
// once per process, so the messages of a start attempt go to one global.
absl::Mutex g_mutex;
bool g_starting ABSL_GUARDED_BY(g_mutex) = false;
std::vector<std::string>* g_start_messages ABSL_GUARDED_BY(g_mutex) = nullptr;

int OnCivetwebMessage(const mg_connection* /*connection*/,
                      const char* message) {
  std::string text = message == nullptr ? "" : message;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.pop_back();
  }
  {
    absl::MutexLock lock(&g_mutex);
    if (g_starting) {
      if (g_start_messages->size() < 8) g_start_messages->push_back(text);
      return 1;
    }
  }
  LogEvent("metrics_http_error", text);
  return 1;  // handled: civetweb writes nothing itself
}

}  // namespace

absl::StatusOr<std::unique_ptr<prometheus::Exposer>> StartMetricsExposer(
    const std::string& listen, int num_threads) {
  if (num_threads < 1) {
    return absl::InvalidArgumentError("metrics exposer needs >= 1 thread");
  }
  // prometheus-cpp copies the callbacks into its CivetServer at construction.
  static const CivetCallbacks kCallbacks = [] {
    CivetCallbacks callbacks;
    callbacks.log_message = &OnCivetwebMessage;
    return callbacks;
  }();
  std::vector<std::string> messages;
  {
    absl::MutexLock lock(&g_mutex);
    g_starting = true;
    g_start_messages = &messages;
  }
  std::unique_ptr<prometheus::Exposer> exposer;
  std::string exception_text;
  try {
    exposer = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", listen, "num_threads",
                                 std::to_string(num_threads)},
        &kCallbacks);
  } catch (const std::exception& e) {
    exception_text = e.what();
  }
  {
    absl::MutexLock lock(&g_mutex);
    g_starting = false;
    g_start_messages = nullptr;
  }
  if (exposer == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on --metrics_listen=", listen, ": ",
        messages.empty() ? exception_text : absl::StrJoin(messages, "; "),
        " (pass --metrics_listen= to run without the metrics endpoint)"));
  }
  return exposer;
}

}  // namespace diarization::server
