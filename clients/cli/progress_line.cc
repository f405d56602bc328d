#include "clients/cli/progress_line.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace diarization::client {

std::string ProgressText(double sent_s, double total_s, double processed_s,
                         double elapsed_s) {
  const double pct =
      total_s > 0 ? 100.0 * std::min(sent_s, total_s) / total_s : 100.0;
  return absl::StrFormat(
      "sent %.1f / %.1f s (%.0f%%), processed %.1f s, %.0f s elapsed", sent_s,
      total_s, pct, processed_s, elapsed_s);
}

ProgressLine::ProgressLine(double total_s, std::FILE* out)
    : total_s_(total_s), out_(out), start_(absl::Now()) {}

bool ProgressLine::StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

void ProgressLine::Sent(double seconds) {
  absl::MutexLock lock(&mu_);
  sent_s_ = seconds;
  DrawLocked(seconds >= total_s_);
}

void ProgressLine::Processed(double seconds) {
  absl::MutexLock lock(&mu_);
  processed_s_ = std::max(processed_s_, seconds);
  DrawLocked(true);
}

void ProgressLine::Clear() {
  absl::MutexLock lock(&mu_);
  if (drawn_) std::fputs("\r\033[K", out_);
  std::fflush(out_);
  drawn_ = false;
}

void ProgressLine::DrawLocked(bool force) {
  const absl::Time now = absl::Now();
  if (!force && now - last_draw_ < absl::Milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  std::fprintf(out_, "\r\033[K%s",
               ProgressText(sent_s_, total_s_, processed_s_,
                            absl::ToDoubleSeconds(now - start_))
                   .c_str());
  std::fflush(out_);
}

}  // namespace diarization::client
