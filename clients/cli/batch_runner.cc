#include "clients/cli/batch_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "clients/cli/audio_file.h"
#include "clients/cli/exit_codes.h"
#include "clients/cli/output_format.h"
#include "clients/cli/progress_line.h"
#include "diarization/v1/diarization.grpc.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/client_context.h"

namespace diarization::client {
namespace {

namespace fs = std::filesystem;

// A status of a file that never reached the server (unreadable, or not
// decodable here in stream mode).
constexpr char kUnreadable[] = "UNREADABLE";
constexpr char kSkipped[] = "SKIPPED";

struct Outcome {
  std::string status;  // "OK", kSkipped, kUnreadable or a gRPC code name
  std::string message;
  int attempts = 0;
  double audio_s = 0;
};

struct CallResult {
  grpc::Status status;
  v1::DiarizeResult result;
  // The server's retry-after-s trailing metadata, when it sent one.
  std::optional<double> retry_after_s;
};

std::optional<double> RetryHint(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find("retry-after-s");
  double s = 0;
  if (it == trailers.end() ||
      !absl::SimpleAtod(std::string(it->second.data(), it->second.size()),
                        &s)) {
    return std::nullopt;
  }
  return std::max(0.0, s);
}

// UNAVAILABLE and RESOURCE_EXHAUSTED, except the refusals that a retry
// cannot change (docs/api.md, "Status codes").
bool Retryable(const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) return true;
  if (status.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) return false;
  const std::string& m = status.error_message();
  return m.find("larger than max") == std::string::npos &&
         m.find("max_decode_cpu_s") == std::string::npos;
}

void SetDeadline(grpc::ClientContext& context, double deadline_s) {
  if (deadline_s > 0) {
    context.set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::microseconds(static_cast<int64_t>(deadline_s * 1e6)));
  }
}

CallResult CallUnary(v1::Diarization::Stub& stub,
                     const v1::DiarizeFileRequest& request, double deadline_s) {
  grpc::ClientContext context;
  SetDeadline(context, deadline_s);
  CallResult out;
  out.status = stub.DiarizeFile(&context, request, &out.result);
  out.retry_after_s = RetryHint(context);
  return out;
}

// One Diarize stream of decoded PCM, at full speed (the writer beside the
// reader, as the single-file mode does).
CallResult CallStream(v1::Diarization::Stub& stub,
                      const v1::DiarizationConfig& base, const PcmAudio& audio,
                      int chunk_ms, double deadline_s) {
  grpc::ClientContext context;
  SetDeadline(context, deadline_s);
  auto stream = stub.Diarize(&context);
  std::thread writer([&] {
    v1::DiarizeRequest first;
    *first.mutable_config() = base;
    v1::AudioFormat* f = first.mutable_config()->mutable_audio();
    f->set_encoding(v1::LINEAR16);
    f->set_sample_rate_hz(audio.sample_rate_hz);
    f->set_channel_count(audio.channel_count);
    if (!stream->Write(first)) return;
    const int64_t step = std::max<int64_t>(
        1, static_cast<int64_t>(audio.sample_rate_hz) * chunk_ms / 1000);
    for (int64_t frame = 0; frame < audio.frames(); frame += step) {
      const int64_t n = std::min(step, audio.frames() - frame);
      v1::DiarizeRequest chunk;
      chunk.set_audio(
          reinterpret_cast<const char*>(audio.samples.data() +
                                        frame * audio.channel_count),
          static_cast<size_t>(n) * audio.channel_count * sizeof(int16_t));
      if (!stream->Write(chunk)) return;
    }
    stream->WritesDone();
  });
  CallResult out;
  bool have_final = false;
  v1::DiarizeResponse response;
  while (stream->Read(&response)) {
    if (response.has_final()) {
      out.result = response.final();
      have_final = true;
    }
  }
  writer.join();
  out.status = stream->Finish();
  out.retry_after_s = RetryHint(context);
  if (out.status.ok() && !have_final) {
    out.status = grpc::Status(grpc::StatusCode::INTERNAL,
                              "the stream ended OK without a final result");
  }
  return out;
}

// Writes `text` to `path` through a temporary file and a rename, so that an
// output that exists is complete (what resume relies on).
absl::Status WriteAtomically(const fs::path& path, const std::string& text) {
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  if (error) {
    return absl::InternalError(absl::StrCat(
        "cannot create ", path.parent_path().string(), ": ", error.message()));
  }
  const fs::path tmp =
      path.parent_path() / absl::StrCat(".", path.filename().string(), ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      return absl::InternalError(absl::StrCat("cannot write ", tmp.string()));
    }
  }
  fs::rename(tmp, path, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", tmp.string(), ": ", error.message()));
  }
  return absl::OkStatus();
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
}

class Batch {
 public:
  Batch(const std::shared_ptr<grpc::Channel>& channel,
        const std::vector<BatchInput>& inputs, const BatchOptions& options,
        const ConfigForFile& config_for)
      : stub_(v1::Diarization::NewStub(channel)),
        inputs_(inputs),
        options_(options),
        config_for_(config_for),
        outcomes_(inputs.size()),
        terminal_(ProgressLine::StderrIsTerminal()),
        start_(absl::Now()) {}

  int Run() {
    std::vector<std::thread> workers;
    const int jobs = std::max(1, std::min<int>(options_.jobs, inputs_.size()));
    for (int i = 0; i < jobs; ++i) workers.emplace_back([this] { Work(); });
    std::thread progress([this] { ShowProgress(); });
    for (std::thread& t : workers) t.join();
    {
      absl::MutexLock lock(&mu_);
      finished_all_ = true;
    }
    progress.join();
    return Summarize();
  }

 private:
  fs::path OutputPath(const BatchInput& input, const char* extension) const {
    return fs::path(options_.out_dir) / (input.output_stem + extension);
  }

  bool Complete(const BatchInput& input) const {
    std::error_code error;
    return fs::exists(OutputPath(input, ".rttm"), error) &&
           (!options_.write_json ||
            fs::exists(OutputPath(input, ".json"), error));
  }

  void Work() {
    std::mt19937_64 random(std::random_device{}());
    while (true) {
      const size_t i = next_.fetch_add(1);
      if (i >= inputs_.size()) return;
      Outcome outcome = Complete(inputs_[i]) ? Outcome{kSkipped, "", 0, 0}
                                             : Diarize(inputs_[i], random);
      absl::MutexLock lock(&mu_);
      if (outcome.status == "OK") audio_s_ += outcome.audio_s;
      ++done_;
      if (outcome.status == kSkipped)
        ++skipped_;
      else if (outcome.status != "OK")
        ++failed_;
      outcomes_[i] = std::move(outcome);
    }
  }

  Outcome Diarize(const BatchInput& input, std::mt19937_64& random) {
    Outcome outcome;
    // Read (and, streaming, decode) once; retries send the same bytes.
    const v1::DiarizationConfig config = config_for_(input.path);
    v1::DiarizeFileRequest request;
    absl::StatusOr<PcmAudio> pcm;
    if (options_.stream) {
      pcm = ReadPcm(input.path);
      if (!pcm.ok()) return {kUnreadable, std::string(pcm.status().message())};
    } else {
      absl::StatusOr<std::string> bytes = ReadFileBytes(input.path);
      if (!bytes.ok()) {
        return {kUnreadable, std::string(bytes.status().message())};
      }
      *request.mutable_config() = config;
      request.mutable_config()->mutable_audio()->set_encoding(v1::ENCODED);
      request.set_audio(*std::move(bytes));
    }
    std::uniform_real_distribution<double> jitter(0.0, 1.0);
    double waited_s = 0;
    while (true) {
      ++outcome.attempts;
      CallResult call = options_.stream
                            ? CallStream(*stub_, config, *pcm,
                                         options_.chunk_ms, options_.deadline_s)
                            : CallUnary(*stub_, request, options_.deadline_s);
      if (call.status.ok()) {
        absl::Status written =
            WriteAtomically(OutputPath(input, ".rttm"),
                            FormatResult(call.result, OutputFormat::kRttm));
        if (written.ok() && options_.write_json) {
          written =
              WriteAtomically(OutputPath(input, ".json"),
                              FormatResult(call.result, OutputFormat::kJson));
        }
        if (!written.ok()) {
          return {"OUTPUT_ERROR", std::string(written.message()),
                  outcome.attempts};
        }
        outcome.status = "OK";
        outcome.audio_s = call.result.audio_s();
        return outcome;
      }
      outcome.status = CodeName(call.status.error_code());
      outcome.message = call.status.error_message();
      if (!Retryable(call.status) ||
          outcome.attempts >= options_.max_attempts) {
        return outcome;
      }
      const double delay = RetryDelaySeconds(
          outcome.attempts, call.retry_after_s.value_or(-1), jitter(random));
      if (waited_s + delay > options_.max_retry_wait_s) return outcome;
      {
        absl::MutexLock lock(&mu_);
        ++retries_;
        ++retried_codes_[outcome.status];
      }
      absl::SleepFor(absl::Seconds(delay));
      waited_s += delay;
    }
  }

  std::string ProgressTextLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const double wall = absl::ToDoubleSeconds(absl::Now() - start_);
    const int processed = done_ - skipped_;
    const int left = static_cast<int>(inputs_.size()) - done_;
    const double eta =
        processed > 0 ? wall / processed * left : (left == 0 ? 0.0 : -1.0);
    return absl::StrFormat(
        "batch: %d/%d files (%d failed, %d skipped, %d retries), %.2f h audio, "
        "RTFx %.1f, ETA %s",
        done_, inputs_.size(), failed_, skipped_, retries_, audio_s_ / 3600,
        wall > 0 ? audio_s_ / wall : 0.0, FormatDuration(eta));
  }

  void ShowProgress() {
    if (options_.progress_every_s <= 0) return;  // --progress=false
    const double every = terminal_ ? 0.5 : options_.progress_every_s;
    absl::Time next = absl::Now() + absl::Seconds(every);
    absl::MutexLock lock(&mu_);
    while (!finished_all_) {
      mu_.AwaitWithDeadline(absl::Condition(&finished_all_), next);
      if (finished_all_) break;
      next = absl::Now() + absl::Seconds(every);
      const std::string text = ProgressTextLocked();
      if (terminal_) {
        std::fprintf(stderr, "\r\033[K%s", text.c_str());
      } else {
        std::fprintf(stderr, "%s\n", text.c_str());
      }
      std::fflush(stderr);
    }
    if (terminal_) std::fprintf(stderr, "\r\033[K");
  }

  int Summarize() {
    absl::MutexLock lock(&mu_);
    const double wall = absl::ToDoubleSeconds(absl::Now() - start_);
    std::map<std::string, int> by_status;
    for (const Outcome& o : outcomes_) ++by_status[o.status];
    google::protobuf::Struct summary;
    auto& f = *summary.mutable_fields();
    f["files"].set_number_value(inputs_.size());
    f["ok"].set_number_value(by_status["OK"]);
    f["skipped"].set_number_value(skipped_);
    f["failed"].set_number_value(failed_);
    f["retries"].set_number_value(retries_);
    f["audio_s"].set_number_value(audio_s_);
    f["wall_s"].set_number_value(wall);
    f["rtfx"].set_number_value(wall > 0 ? audio_s_ / wall : 0.0);
    auto& statuses = *f["by_status"].mutable_struct_value()->mutable_fields();
    for (const auto& [status, count] : by_status) {
      if (count > 0) statuses[status].set_number_value(count);
    }
    auto& retried = *f["retried"].mutable_struct_value()->mutable_fields();
    for (const auto& [status, count] : retried_codes_) {
      retried[status].set_number_value(count);
    }
    auto* failed_list = f["failed_files"].mutable_list_value();
    std::string text = absl::StrFormat(
        "batch: %d files: %d ok, %d skipped, %d failed; %.2f h of audio in "
        "%s wall, RTFx %.1f; %d retries\n",
        inputs_.size(), by_status["OK"], skipped_, failed_, audio_s_ / 3600,
        FormatDuration(wall), wall > 0 ? audio_s_ / wall : 0.0, retries_);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Outcome& o = outcomes_[i];
      if (o.status == "OK" || o.status == kSkipped) continue;
      auto& entry =
          *failed_list->add_values()->mutable_struct_value()->mutable_fields();
      entry["path"].set_string_value(inputs_[i].path);
      entry["status"].set_string_value(o.status);
      entry["message"].set_string_value(o.message);
      entry["attempts"].set_number_value(o.attempts);
      absl::StrAppend(&text, "failed: ", inputs_[i].path, ": ", o.status, ": ",
                      o.message, " (", o.attempts, " attempt",
                      o.attempts == 1 ? "" : "s", ")\n");
    }
    std::string json;
    google::protobuf::util::JsonPrintOptions print;
    print.add_whitespace = true;
    print.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(summary, &json, print);
    std::cout << json;
    std::cout.flush();
    std::cerr << text;
    return failed_ > 0 ? kExitBatchFailed : kExitOk;
  }

  std::unique_ptr<v1::Diarization::Stub> stub_;
  const std::vector<BatchInput>& inputs_;
  const BatchOptions& options_;
  const ConfigForFile& config_for_;
  std::atomic<size_t> next_{0};
  absl::Mutex mu_;
  std::vector<Outcome> outcomes_ ABSL_GUARDED_BY(mu_);
  int done_ ABSL_GUARDED_BY(mu_) = 0;
  int skipped_ ABSL_GUARDED_BY(mu_) = 0;
  int failed_ ABSL_GUARDED_BY(mu_) = 0;
  int retries_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> retried_codes_ ABSL_GUARDED_BY(mu_);
  double audio_s_ ABSL_GUARDED_BY(mu_) = 0;
  bool finished_all_ ABSL_GUARDED_BY(mu_) = false;
  const bool terminal_;
  const absl::Time start_;
};

}  // namespace

double RetryDelaySeconds(int retry, double hint_s, double jitter) {
  const double base =
      hint_s >= 0 ? hint_s
                  : std::min(30.0, 0.5 * std::pow(2.0, std::max(0, retry - 1)));
  return base * (1.0 + 0.2 * std::clamp(jitter, 0.0, 1.0));
}

int RunBatch(const std::shared_ptr<grpc::Channel>& channel,
             const std::vector<BatchInput>& inputs, const BatchOptions& options,
             const ConfigForFile& config_for) {
  std::error_code error;
  fs::create_directories(options.out_dir, error);
  if (error || !fs::is_directory(options.out_dir)) {
    std::cerr << "diarize_client: cannot create --out_dir " << options.out_dir
              << (error ? ": " + error.message() : "") << "\n";
    return kExitUsage;
  }
  return Batch(channel, inputs, options, config_for).Run();
}

}  // namespace diarization::client
