#include "server/grpc_core_log.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "grpc/support/log.h"
#include "server/request_log.h"
#include "server/transport_events.h"

namespace diarization::server {
namespace {

void LogAsJson(gpr_log_func_args* args) {
  LogRateLimit& limit = LogRateLimit::Get();
  if (!limit.Allow(LogRateLimit::kEventKind)) return;
  std::string detail =
      absl::StrCat(gpr_log_severity_string(args->severity), " ",
                   args->file != nullptr ? args->file : "", ":", args->line,
                   ": ", args->message != nullptr ? args->message : "");
  if (const uint64_t n = limit.TakeSuppressed(LogRateLimit::kEventKind)) {
    absl::StrAppend(&detail, " (", n, " event lines left out before this)");
  }
  LogEvent("grpc", detail);
}

}  // namespace

void RouteGrpcCoreLogToJson() { gpr_set_log_function(&LogAsJson); }

}  // namespace diarization::server
