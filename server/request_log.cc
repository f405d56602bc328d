#include "server/request_log.h"

#include <unistd.h>

#include <cmath>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "server/status_util.h"

namespace diarization::server {
namespace {

std::string Timestamp() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(),
                          absl::UTCTimeZone());
}

// JSON has no NaN/Inf: such values are written as null.
nlohmann::json Number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

void WriteLine(const std::string& line) {
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) return;  // nowhere to report a failing stderr
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

std::string FormatRequestLog(const RequestLogEntry& e) {
  nlohmann::json j;
  j["ts"] = Timestamp();
  j["request_id"] = e.request_id;
  j["method"] = e.method;
  j["code"] = std::string(GrpcCodeName(e.code));
  j["audio_s"] = Number(e.audio_s);
  j["processing_s"] = Number(e.processing_s);
  j["rtfx"] = Number(e.rtfx);
  j["wall_s"] = Number(e.wall_s);
  j["device"] = e.device;
  j["peer"] = e.peer;
  j["message"] = e.message;
  for (const auto& [name, value] : e.extra) j[name] = Number(value);
  // Replace invalid UTF-8 (client-supplied text) instead of throwing.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

void LogRequest(const RequestLogEntry& entry) {
  WriteLine(FormatRequestLog(entry));
}

void LogEvent(std::string_view event, std::string_view detail) {
  nlohmann::json j;
  j["ts"] = Timestamp();
  j["event"] = std::string(event);
  j["detail"] = std::string(detail);
  WriteLine(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
            "\n");
}

}  // namespace diarization::server
