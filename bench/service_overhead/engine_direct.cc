// The engine-direct half of the service-overhead benchmark: the same audio
// file through runtime::Engine in-process, with the server's backend flags
// and defaults (engine/runtime/backend_flags.h; 5 ms batch wait), so that
// run.sh can set it beside the same file through gRPC on loopback (server +
// diarize_client) and attribute the difference to the service layer (protobuf,
// gRPC, decode on the server).
//
//   engine_direct --audio FILE --models DIR [--device cpu|cuda:N|cuda:0,1]
//       [--mode unary|stream] [--requests N] [--concurrency C]
//       [--chunk_ms 100] [--rttm_out FILE]
//
// unary: each request decodes the file's bytes (as the server does for
// DiarizeFile) and submits the whole waveform; latency runs from the start
// of the decode to the completion. stream: the waveform is decoded once and
// each request appends it in --chunk_ms pieces as fast as it can, then
// finishes; latency runs from the first append to the completion.
// Prints one JSON object per run on stdout.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/audio/audio.h"
#include "engine/common/status_macros.h"
#include "engine/common/user_path.h"
#include "engine/models/format/model_dir.h"
#include "engine/pipeline/diarization.h"
#include "engine/pipeline/rttm.h"
#include "engine/runtime/backend_flags.h"
#include "engine/runtime/devices.h"
#include "engine/runtime/engine.h"
#include "prometheus/registry.h"
#include "testing/metric_value.h"

ABSL_FLAG(std::string, audio, "", "Audio file (WAV, FLAC, OGG).");
ABSL_FLAG(std::string, models, "", "Model directory.");
ABSL_FLAG(std::string, mode, "unary", "unary or stream.");
ABSL_FLAG(int, requests, 5, "Measured requests (after --warmup).");
ABSL_FLAG(int, warmup, 1, "Unmeasured requests first.");
ABSL_FLAG(int, concurrency, 1, "Requests in flight at once.");
ABSL_FLAG(int, chunk_ms, 100, "stream: audio per Append, milliseconds.");
ABSL_FLAG(bool, fast, false, "FAST quality mode.");
ABSL_FLAG(int, repeat_audio, 1,
          "Tile the decoded audio this many times (longer inputs from a short "
          "file; unary then submits the tiled waveform without decoding).");
ABSL_FLAG(double, max_batch_wait_ms, 5.0, "Engine option.");
ABSL_FLAG(int, host_threads, 2, "Engine option.");
ABSL_FLAG(std::string, concurrent_stages, "auto",
          "Device option: true runs segmentation and embedding on two worker "
          "threads (overlapping on the GPU's streams); auto keeps the "
          "device's default (CUDA true, CPU false).");
ABSL_FLAG(std::string, rttm_out, "", "Write the last result's RTTM here.");
ABSL_FLAG(std::string, uri, "", "RTTM file id (default: the file's stem).");

namespace diarization::bench {
namespace {

namespace fs = std::filesystem;

struct Done {
  absl::Notification note;
  absl::StatusOr<runtime::JobResult> result = absl::UnknownError("pending");
};

// One request; returns its latency in seconds and its result.
absl::StatusOr<std::pair<double, runtime::JobResult>> RunOne(
    runtime::Engine& engine, const std::string& mode,
    const std::vector<std::byte>& file_bytes, const std::vector<float>& samples,
    const runtime::JobOptions& job, int chunk_samples) {
  Done done;
  runtime::JobCallbacks cb;
  cb.on_complete = [&done](absl::StatusOr<runtime::JobResult> r) {
    done.result = std::move(r);
    done.note.Notify();
  };
  const absl::Time start = absl::Now();
  if (mode == "unary" && file_bytes.empty()) {
    RETURN_IF_ERROR(
        engine.Submit(job, std::vector<float>(samples), cb).status());
  } else if (mode == "unary") {
    ASSIGN_OR_RETURN(audio::Waveform wave, audio::DecodeFile(file_bytes));
    RETURN_IF_ERROR(engine.Submit(job, std::move(wave.samples), cb).status());
  } else {
    ASSIGN_OR_RETURN(std::unique_ptr<runtime::Job> handle,
                     engine.StartJob(job, cb));
    for (size_t pos = 0; pos < samples.size(); pos += chunk_samples) {
      const size_t n = std::min<size_t>(chunk_samples, samples.size() - pos);
      RETURN_IF_ERROR(
          handle->Append(std::span<const float>(samples.data() + pos, n)));
    }
    RETURN_IF_ERROR(handle->Finish());
  }
  done.note.WaitForNotification();
  const double latency = absl::ToDoubleSeconds(absl::Now() - start);
  RETURN_IF_ERROR(done.result.status());
  return std::make_pair(latency, *std::move(done.result));
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * v.size()));
  return v[i];
}

absl::Status Run() {
  const std::string audio_path = ResolveUserPath(absl::GetFlag(FLAGS_audio));
  const std::string models_path = ResolveUserPath(absl::GetFlag(FLAGS_models));
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (audio_path.empty() || models_path.empty()) {
    return absl::InvalidArgumentError("--audio and --models are required");
  }
  if (mode != "unary" && mode != "stream") {
    return absl::InvalidArgumentError(
        absl::StrCat("--mode is '", mode, "'; use unary or stream"));
  }
  const int requests = absl::GetFlag(FLAGS_requests);
  const int concurrency = std::max(1, absl::GetFlag(FLAGS_concurrency));

  std::ifstream in(audio_path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", audio_path));
  std::vector<char> raw((std::istreambuf_iterator<char>(in)),
                        std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(raw.size());
  std::transform(raw.begin(), raw.end(), bytes.begin(),
                 [](char c) { return static_cast<std::byte>(c); });
  ASSIGN_OR_RETURN(audio::Waveform wave, audio::DecodeFile(bytes));
  const int repeat = std::max(1, absl::GetFlag(FLAGS_repeat_audio));
  if (repeat > 1) {
    const std::vector<float> once = wave.samples;
    for (int i = 1; i < repeat; ++i) {
      wave.samples.insert(wave.samples.end(), once.begin(), once.end());
    }
    bytes.clear();  // RunOne: unary submits the tiled samples
  }

  const absl::Time load_start = absl::Now();
  // The server's backend flags and defaults (engine/runtime/backend_flags.h).
  ASSIGN_OR_RETURN(const runtime::BackendFlags backend,
                   runtime::BackendFlagsFromCommandLine());
  ASSIGN_OR_RETURN(runtime::LoadedDevices loaded,
                   runtime::LoadDevices(models_path, backend.devices));
  std::string device_description;
  for (const runtime::Device& d : loaded.devices) {
    absl::StrAppend(&device_description, device_description.empty() ? "" : "; ",
                    d.name, " ", d.description);
  }
  const std::string cs = absl::GetFlag(FLAGS_concurrent_stages);
  if (cs != "auto" && cs != "true" && cs != "false") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--concurrent_stages is '", cs, "'; use auto, true or false"));
  }
  for (runtime::Device& d : loaded.devices) {
    if (cs != "auto") d.concurrent_stages = cs == "true";
  }
  const bool concurrent_stages = loaded.devices.front().concurrent_stages;
  runtime::EngineOptions options;
  options.segmentation_batch_size = backend.segmentation_batch_size;
  options.embedding_batch_size = backend.embedding_batch_size;
  options.max_batch_wait =
      absl::Milliseconds(absl::GetFlag(FLAGS_max_batch_wait_ms));
  options.host_threads = absl::GetFlag(FLAGS_host_threads);
  options.max_backlog_audio_s =
      std::max(3600.0, 2.0 * concurrency * wave.duration_s());
  // A speed bench: any one recording may take the whole backlog.
  options.max_request_backlog_share = 1.0;
  ASSIGN_OR_RETURN(std::unique_ptr<runtime::Engine> engine,
                   runtime::Engine::Create(options, std::move(loaded.devices),
                                           loaded.plda, nullptr));
  const double load_s = absl::ToDoubleSeconds(absl::Now() - load_start);

  runtime::JobOptions job;
  job.config = absl::GetFlag(FLAGS_fast) ? pipeline::PipelineConfig::Fast()
                                         : pipeline::PipelineConfig::Accurate();
  const int chunk_samples = std::max(
      1, absl::GetFlag(FLAGS_chunk_ms) * diarization::kSampleRateHz / 1000);

  for (int i = 0; i < absl::GetFlag(FLAGS_warmup); ++i) {
    RETURN_IF_ERROR(
        RunOne(*engine, mode, bytes, wave.samples, job, chunk_samples)
            .status());
  }

  absl::Mutex mu;
  std::vector<double> latencies;
  absl::Status first_error;
  runtime::JobResult last;
  std::map<std::string, int> jobs_per_device;
  std::set<std::string> distinct_rttms;  // whichever device ran it: one
  int next = 0;
  const absl::Time wall_start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&] {
      while (true) {
        {
          absl::MutexLock lock(&mu);
          if (next >= requests || !first_error.ok()) return;
          ++next;
        }
        auto r = RunOne(*engine, mode, bytes, wave.samples, job, chunk_samples);
        absl::MutexLock lock(&mu);
        if (!r.ok()) {
          if (first_error.ok()) first_error = r.status();
          return;
        }
        latencies.push_back(r->first);
        ++jobs_per_device[r->second.device];
        distinct_rttms.insert(FormatRttm(r->second.output.segments, "x"));
        last = std::move(r->second);
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall_s = absl::ToDoubleSeconds(absl::Now() - wall_start);
  RETURN_IF_ERROR(first_error);

  std::string uri = absl::GetFlag(FLAGS_uri);
  if (uri.empty()) uri = fs::path(audio_path).stem().string();
  if (const std::string out = ResolveUserPath(absl::GetFlag(FLAGS_rttm_out));
      !out.empty()) {
    std::ofstream rttm(out);
    rttm << FormatRttm(last.output.segments, uri);
    if (!rttm) return absl::InternalError(absl::StrCat("cannot write ", out));
  }
  // Where the time went, from the engine's own metrics (all requests,
  // warm-up included).
  const prometheus::Registry& registry = *engine->metrics().registry();
  auto stage = [&](const std::string& name, const std::string& field) {
    return diarization::testing::MetricValue(
        registry, "diarization_processing_seconds", {{"stage", name}}, field);
  };
  const double seg_s = stage("segmentation", "sum");
  const double seg_n = stage("segmentation", "count");
  const double emb_s = stage("embedding", "sum");
  const double emb_n = stage("embedding", "count");
  const double clu_s = stage("clustering", "sum");
  std::string per_device;
  for (const auto& [name, n] : jobs_per_device) {
    absl::StrAppend(&per_device, per_device.empty() ? "" : ",", "\"", name,
                    "\":", n);
  }
  double sum = 0.0;
  for (double l : latencies) sum += l;
  const double mean = latencies.empty() ? 0.0 : sum / latencies.size();
  const double audio_s = wave.duration_s();
  std::printf(
      "{\"path\":\"engine_direct\",\"mode\":\"%s\",\"device\":\"%s\","
      "\"device_description\":\"%s\",\"audio_s\":%.3f,\"requests\":%d,"
      "\"concurrency\":%d,\"load_s\":%.3f,\"latency_mean_s\":%.4f,"
      "\"latency_p50_s\":%.4f,\"latency_p99_s\":%.4f,"
      "\"latency_max_s\":%.4f,\"rtfx_mean\":%.2f,"
      "\"throughput_rtfx\":%.2f,\"engine_processing_s_last\":%.4f,"
      "\"speakers_last\":%zu,\"segments_last\":%zu,"
      "\"concurrent_stages\":%s,\"segmentation_s\":%.3f,"
      "\"segmentation_batches\":%.0f,\"embedding_s\":%.3f,"
      "\"embedding_batches\":%.0f,\"clustering_s\":%.3f,"
      "\"jobs_per_device\":{%s},\"distinct_rttms\":%zu,\"wall_s\":%.3f}\n",
      mode.c_str(), last.device.c_str(), device_description.c_str(), audio_s,
      requests, concurrency, load_s, mean, Percentile(latencies, 0.5),
      Percentile(latencies, 0.99), Percentile(latencies, 1.0),
      mean > 0 ? audio_s / mean : 0.0,
      wall_s > 0 ? audio_s * requests / wall_s : 0.0, last.processing_s,
      last.output.labels.size(), last.output.segments.size(),
      concurrent_stages ? "true" : "false", seg_s, seg_n, emb_s, emb_n, clu_s,
      per_device.c_str(), distinct_rttms.size(), wall_s);
  return engine->Drain(absl::Now() + absl::Seconds(30));
}

}  // namespace
}  // namespace diarization::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Engine-direct half of the service-overhead benchmark "
      "(bench/service_overhead/README.md)");
  absl::ParseCommandLine(argc, argv);
  const absl::Status s = diarization::bench::Run();
  if (!s.ok()) {
    std::fprintf(stderr, "engine_direct: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
