// Batch mode of diarize_client: many files, N calls in flight, one RTTM
// (and JSON when asked) per input in an output folder, resumable, with
// retries that follow the server's retry hint, a progress line and a summary
// (docs/api.md, "Command-line client", "Batch mode").
#ifndef DIARIZATION_CLIENTS_CLI_BATCH_RUNNER_H_
#define DIARIZATION_CLIENTS_CLI_BATCH_RUNNER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "clients/cli/batch_inputs.h"
#include "diarization/v1/diarization.pb.h"
#include "grpcpp/channel.h"

namespace diarization::client {

struct BatchOptions {
  std::string out_dir;
  // Calls in flight (each also reads its next file: decode-ahead).
  int jobs = 4;
  // Diarize with PCM decoded here (as --mode stream) instead of DiarizeFile
  // with the file's bytes (--mode unary).
  bool stream = false;
  int chunk_ms = 100;
  // Also write <name>.json (the DiarizeResult as --output json prints it).
  bool write_json = false;
  // Deadline of each attempt (0: none).
  double deadline_s = 0;
  // Attempts per file for UNAVAILABLE / RESOURCE_EXHAUSTED, and the most
  // seconds one file may spend waiting between them.
  int max_attempts = 10;
  double max_retry_wait_s = 600;
  // The progress line: redrawn on a terminal; elsewhere one line every
  // `progress_every_s`; none at all when it is 0.
  double progress_every_s = 10;
};

// The request config of one file (the single-file mode's, so that a batch
// gives the same RTTM byte for byte).
using ConfigForFile = std::function<v1::DiarizationConfig(const std::string&)>;

// Runs the batch and returns the exit code: 0 when every input has its
// outputs (diarized now or skipped because they existed), kExitBatchFailed
// when any failed for good (listed on stderr and in the summary), kExitUsage
// when the output folder cannot be made. The summary goes to stdout as JSON
// and to stderr as text.
int RunBatch(const std::shared_ptr<grpc::Channel>& channel,
             const std::vector<BatchInput>& inputs, const BatchOptions& options,
             const ConfigForFile& config_for);

// The wait before retry `retry` (1, 2, ...): the server's hint when it gave
// one, else 0.5 s doubling up to 30 s; `jitter` in [0, 1) adds up to 20 %.
double RetryDelaySeconds(int retry, double hint_s, double jitter);

}  // namespace diarization::client

#endif  // DIARIZATION_CLIENTS_CLI_BATCH_RUNNER_H_
