// One self-rewriting status line on a terminal (stderr) while a stream
// runs: audio sent by the client, audio the server has processed (from the
// partial results), and elapsed time, instead of a silent wait on a long
// file. Thread-safe: the writer thread reports what it sent, the reader what
// the server processed. Redraws at most ten times a second.
#ifndef DIARIZATION_CLIENTS_CLI_PROGRESS_LINE_H_
#define DIARIZATION_CLIENTS_CLI_PROGRESS_LINE_H_

#include <cstdio>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace diarization::client {

// The text of the line (no control characters), for tests and Draw.
std::string ProgressText(double sent_s, double total_s, double processed_s,
                         double elapsed_s);

class ProgressLine {
 public:
  // `total_s`: the file's duration. Draws on `out` (stderr).
  ProgressLine(double total_s, std::FILE* out);
  // Whether stderr is a terminal (progress is shown only then).
  static bool StderrIsTerminal();

  void Sent(double seconds);
  void Processed(double seconds);
  // Erases the line (before the result or an error is printed).
  void Clear();

 private:
  void DrawLocked(bool force) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const double total_s_;
  std::FILE* const out_;
  const absl::Time start_;
  absl::Mutex mu_;
  double sent_s_ ABSL_GUARDED_BY(mu_) = 0;
  double processed_s_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_draw_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool drawn_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace diarization::client

#endif  // DIARIZATION_CLIENTS_CLI_PROGRESS_LINE_H_
