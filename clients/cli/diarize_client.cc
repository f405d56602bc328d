// diarize-client: send a recording to the diarization service and print who
// spoke when.
//
//   diarize_client [--server HOST:PORT] [--mode stream|realtime|unary]
//                  [--output rttm|json|text|svg] [flags] FILE
//   diarize_client --server ipv4:10.0.0.1:50051,10.0.0.2:50051 \
//                  --lb_policy round_robin FILE   # many replicas
//   diarize_client --info            # GetInfo as JSON
//   diarize_client --wait_for_serving_s 60   # block until health SERVING
//   diarize_client --out_dir OUT --jobs 8 FILE|DIR ...   # batch mode
//
// stream: decode FILE here to 16-bit PCM at its own rate and send it in
// --chunk_ms chunks as fast as flow control allows; realtime: the same at the
// pace of the audio (as a live source would); unary: send the file's bytes
// whole with DiarizeFile (the server decodes). Exit codes: exit_codes.h.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "clients/cli/audio_file.h"
#include "clients/cli/batch_inputs.h"
#include "clients/cli/batch_runner.h"
#include "clients/cli/channel_config.h"
#include "clients/cli/channel_security.h"
#include "clients/cli/exit_codes.h"
#include "clients/cli/output_format.h"
#include "clients/cli/progress_line.h"
#include "clients/cli/voiceprints.h"
#include "diarization/v1/diarization.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "gRPC target: host:port, dns:///name:port, or "
          "ipv4:host:port,host:port (many replicas: with --lb_policy)");
ABSL_FLAG(std::string, mode, "stream",
          "stream (full speed), realtime (paced like live audio), or unary "
          "(DiarizeFile with the file's bytes)");
ABSL_FLAG(std::string, output, "rttm",
          "rttm, json, text or svg (the timeline as a picture)");
ABSL_FLAG(std::string, lb_policy, "",
          "round_robin: spread calls over every address the target resolves "
          "to (dns:///name:port or ipv4:a:p,b:p), with health checks and a "
          "retry of UNAVAILABLE (channel_config.h); default: one connection");
ABSL_FLAG(std::string, service_config, "",
          "gRPC service config JSON (overrides --lb_policy)");
ABSL_FLAG(std::string, svg_out, "",
          "Also write the timeline picture (as --output svg) to this file");
ABSL_FLAG(bool, progress, true,
          "On a terminal (stderr), show audio sent and processed while a "
          "stream runs");
ABSL_FLAG(int, chunk_ms, 100, "Audio per stream message, milliseconds");
ABSL_FLAG(int, num_speakers, 0, "Exact speaker count (0: unknown)");
ABSL_FLAG(int, min_speakers, 0, "Lower bound on the speaker count (0: none)");
ABSL_FLAG(int, max_speakers, 0, "Upper bound on the speaker count (0: none)");
ABSL_FLAG(bool, exclusive, false,
          "Exclusive view: at most one speaker at a time");
ABSL_FLAG(bool, fast, false, "FAST quality mode (2 s window step)");
ABSL_FLAG(bool, centroids, false, "Ask for one centroid per speaker");
ABSL_FLAG(bool, partial, false,
          "Ask for partial results while streaming (printed to stderr)");
ABSL_FLAG(double, partial_interval_s, 0,
          "Seconds of audio between partial results (0: server default)");
ABSL_FLAG(bool, report_latency, false,
          "Streams: print to stderr how long after the half-close (the end "
          "of the audio) the final result arrived, as 'final result N ms "
          "after the half-close'");
ABSL_FLAG(std::string, request_id, "", "Request id (default: server's)");
ABSL_FLAG(std::string, uri, "", "RTTM file id (default: the file's stem)");
ABSL_FLAG(double, deadline_s, 0, "Call deadline in seconds (0: none)");
ABSL_FLAG(bool, info, false, "Print GetInfo as JSON and exit");
ABSL_FLAG(double, wait_for_serving_s, 0,
          "Wait up to this long for health SERVING (then run, or exit when no "
          "FILE is given); exit 4 if it never comes");
// Security (docs/operations.md, "Security").
ABSL_FLAG(bool, tls, false,
          "TLS with the system's CA roots (implied by the --tls_* files)");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA bundle that signed the server's certificate");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM client certificate, for a server that requires mutual TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_server_name, "",
          "Name to verify the server's certificate against (default: the "
          "--server host)");
ABSL_FLAG(std::string, token, "",
          "Bearer token sent with every call (visible in ps: prefer "
          "--token_file)");
ABSL_FLAG(std::string, token_file, "",
          "File whose first line is the bearer token");
// Batch mode (batch_runner.h; docs/api.md, "Batch mode").
ABSL_FLAG(std::string, out_dir, "",
          "Batch mode: diarize every FILE, and the audio files under every "
          "DIR, into this folder (NAME.rttm each; inputs whose outputs exist "
          "are skipped); a JSON summary goes to stdout");
ABSL_FLAG(int, jobs, 4, "Batch mode: calls in flight");
ABSL_FLAG(bool, batch_json, false,
          "Batch mode: also write NAME.json (as --output json prints it)");
ABSL_FLAG(int, max_attempts, 10,
          "Batch mode: attempts per file for UNAVAILABLE and "
          "RESOURCE_EXHAUSTED (waiting the server's retry hint, else backing "
          "off)");
ABSL_FLAG(double, max_retry_wait_s, 600,
          "Batch mode: most seconds one file may wait between its attempts");

// Voiceprints and identification (docs/api.md, "Identification").
ABSL_FLAG(std::string, enroll, "",
          "Make a voiceprint of the one speaker in this audio file "
          "(CreateVoiceprint) and write it to --out");
ABSL_FLAG(std::string, out, "", "Where --enroll writes the voiceprint");
ABSL_FLAG(std::vector<std::string>, speech, {},
          "With --enroll: START-END ranges (seconds, comma-separated) that "
          "hold the speaker's speech");
ABSL_FLAG(std::vector<std::string>, known, {},
          "Known speakers: LABEL=VOICEPRINT_FILE entries, comma-separated");
ABSL_FLAG(double, threshold, 0,
          "Identification threshold (cosine; 0: the server's default 0.5)");
ABSL_FLAG(bool, both_views, false,
          "Ask for the regular and the exclusive view together");
ABSL_FLAG(bool, stable_labels, false,
          "Streams: keep speaker labels from one partial result to the next "
          "and to the final");
ABSL_FLAG(std::string, exclusive_out, "",
          "With --both_views: write the exclusive view's RTTM to this file");

namespace diarization::client {
namespace {

int Report(const grpc::Status& status) {
  if (!status.ok()) {
    std::cerr << "diarize_client: " << CodeName(status.error_code()) << ": "
              << status.error_message() << "\n";
  }
  return ExitCodeFor(status.error_code());
}

// Prints the result; with --svg_out also writes its picture there.
int Emit(const v1::DiarizeResult& result, OutputFormat format) {
  std::cout << FormatResult(result, format);
  if (format != OutputFormat::kJson) std::cerr << FormatIdentities(result);
  if (const std::string path = absl::GetFlag(FLAGS_exclusive_out);
      !path.empty()) {
    std::ofstream out(path);
    out << result.exclusive_rttm();
    if (!out) {
      std::cerr << "diarize_client: cannot write --exclusive_out " << path
                << "\n";
      return kExitOther;
    }
  }
  if (const std::string path = absl::GetFlag(FLAGS_svg_out); !path.empty()) {
    std::ofstream out(path);
    out << FormatResult(result, OutputFormat::kSvg);
    if (!out) {
      std::cerr << "diarize_client: cannot write --svg_out " << path << "\n";
      return kExitOther;
    }
  }
  return kExitOk;
}

void SetDeadline(grpc::ClientContext* context) {
  const double s = absl::GetFlag(FLAGS_deadline_s);
  if (s > 0) {
    context->set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::microseconds(static_cast<int64_t>(s * 1e6)));
  }
}

std::string FileStem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  const size_t dot = name.find_last_of('.');
  if (dot != std::string::npos && dot > 0) name = name.substr(0, dot);
  // The server refuses spaces and non-ASCII in uri.
  for (char& c : name) {
    if (c < '!' || c > '~') c = '_';
  }
  return name.empty() ? "audio" : name.substr(0, 128);
}

v1::DiarizationConfig BaseConfig(const std::string& path) {
  v1::DiarizationConfig c;
  c.mutable_speakers()->set_num_speakers(absl::GetFlag(FLAGS_num_speakers));
  c.mutable_speakers()->set_min_speakers(absl::GetFlag(FLAGS_min_speakers));
  c.mutable_speakers()->set_max_speakers(absl::GetFlag(FLAGS_max_speakers));
  v1::DiarizationOptions* o = c.mutable_options();
  o->set_exclusive(absl::GetFlag(FLAGS_exclusive));
  o->set_return_centroids(absl::GetFlag(FLAGS_centroids));
  o->set_quality(absl::GetFlag(FLAGS_fast) ? v1::FAST : v1::ACCURATE);
  o->set_partial_results(absl::GetFlag(FLAGS_partial));
  o->set_partial_interval_s(absl::GetFlag(FLAGS_partial_interval_s));
  c.set_request_id(absl::GetFlag(FLAGS_request_id));
  c.set_uri(absl::GetFlag(FLAGS_uri).empty() ? FileStem(path)
                                             : absl::GetFlag(FLAGS_uri));
  o->set_both_views(absl::GetFlag(FLAGS_both_views) ||
                    !absl::GetFlag(FLAGS_exclusive_out).empty());
  o->set_stable_labels(absl::GetFlag(FLAGS_stable_labels));
  c.set_identification_threshold(absl::GetFlag(FLAGS_threshold));
  // Checked in Main (LoadKnownSpeakers there first), so this cannot fail.
  absl::StatusOr<std::vector<v1::KnownSpeaker>> known =
      LoadKnownSpeakers(absl::GetFlag(FLAGS_known));
  if (known.ok()) {
    for (v1::KnownSpeaker& k : *known) {
      *c.add_known_speakers() = std::move(k);
    }
  }
  return c;
}

// Polls grpc.health.v1.Health/Check until SERVING or the timeout.
bool WaitForServing(const std::shared_ptr<grpc::Channel>& channel,
                    double timeout_s) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  const absl::Time end = absl::Now() + absl::Seconds(timeout_s);
  std::string last = "no answer";
  while (true) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(2));
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status s = stub->Check(&context, request, &response);
    if (s.ok() &&
        response.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      return true;
    }
    last = s.ok() ? grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
                        response.status())
                  : s.error_message();
    if (absl::Now() >= end) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  std::cerr << "diarize_client: the server did not report SERVING within "
            << timeout_s << " s (last: " << last << ")\n";
  return false;
}

int RunInfo(v1::Diarization::Stub& stub) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ServerInfo info;
  const grpc::Status s = stub.GetInfo(&context, v1::GetInfoRequest(), &info);
  if (s.ok()) std::cout << ToJson(info);
  return Report(s);
}

// --enroll FILE --out VOICEPRINT: CreateVoiceprint with the file's bytes.
int RunEnroll(v1::Diarization::Stub& stub, const std::string& path,
              const std::string& out_path) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  absl::StatusOr<std::vector<v1::TimeRange>> ranges =
      ParseSpeechRanges(absl::GetFlag(FLAGS_speech));
  if (!bytes.ok() || !ranges.ok()) {
    std::cerr << "diarize_client: "
              << (!bytes.ok() ? bytes.status() : ranges.status()).message()
              << "\n";
    return kExitUsage;
  }
  v1::CreateVoiceprintRequest request;
  v1::DiarizeFileRequest* recording = request.mutable_recording();
  recording->mutable_config()->mutable_audio()->set_encoding(v1::ENCODED);
  recording->mutable_config()->set_request_id(absl::GetFlag(FLAGS_request_id));
  recording->set_audio(*std::move(bytes));
  for (const v1::TimeRange& r : *ranges) *request.add_speech() = r;
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::Voiceprint voiceprint;
  const grpc::Status s = stub.CreateVoiceprint(&context, request, &voiceprint);
  if (!s.ok()) return Report(s);
  if (absl::Status w = WriteVoiceprint(voiceprint, out_path); !w.ok()) {
    std::cerr << "diarize_client: " << w.message() << "\n";
    return kExitOther;
  }
  std::cerr << absl::StrFormat(
      "voiceprint of %.2f s of speech written to %s (model %s)\n",
      voiceprint.speech_seconds(), out_path, voiceprint.model_sha256());
  return kExitOk;
}

int RunUnary(v1::Diarization::Stub& stub, const std::string& path,
             OutputFormat format) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) {
    std::cerr << "diarize_client: " << bytes.status().message() << "\n";
    return kExitUsage;
  }
  v1::DiarizeFileRequest request;
  *request.mutable_config() = BaseConfig(path);
  request.mutable_config()->mutable_audio()->set_encoding(v1::ENCODED);
  request.set_audio(*std::move(bytes));
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::DiarizeResult result;
  const grpc::Status s = stub.DiarizeFile(&context, request, &result);
  if (s.ok()) return Emit(result, format);
  return Report(s);
}

int RunStream(v1::Diarization::Stub& stub, const std::string& path,
              OutputFormat format, bool realtime) {
  absl::StatusOr<PcmAudio> audio = ReadPcm(path);
  if (!audio.ok()) {
    std::cerr << "diarize_client: " << audio.status().message() << "\n";
    return kExitUsage;
  }
  const int chunk_ms = absl::GetFlag(FLAGS_chunk_ms);
  if (chunk_ms < 1) {
    std::cerr << "diarize_client: --chunk_ms must be >= 1\n";
    return kExitUsage;
  }
  grpc::ClientContext context;
  SetDeadline(&context);
  std::unique_ptr<
      grpc::ClientReaderWriter<v1::DiarizeRequest, v1::DiarizeResponse>>
      stream = stub.Diarize(&context);
  // Progress needs the server's partial results; they are asked for but not
  // printed unless --partial.
  const bool show_partials = absl::GetFlag(FLAGS_partial);
  std::unique_ptr<ProgressLine> progress;
  if (absl::GetFlag(FLAGS_progress) && ProgressLine::StderrIsTerminal()) {
    progress = std::make_unique<ProgressLine>(
        static_cast<double>(audio->frames()) / audio->sample_rate_hz, stderr);
  }

  // The half-close's time (absl::ToUnixNanos), for --report_latency; 0
  // until the writer gets there.
  std::atomic<int64_t> half_close_ns{0};
  // The writer runs beside the reader so that partial results show up while
  // audio is still being sent.
  std::thread writer([&] {
    v1::DiarizeRequest first;
    *first.mutable_config() = BaseConfig(path);
    if (progress != nullptr) {
      first.mutable_config()->mutable_options()->set_partial_results(true);
    }
    v1::AudioFormat* f = first.mutable_config()->mutable_audio();
    f->set_encoding(v1::LINEAR16);
    f->set_sample_rate_hz(audio->sample_rate_hz);
    f->set_channel_count(audio->channel_count);
    if (!stream->Write(first)) return;
    const int64_t frames_per_chunk = std::max<int64_t>(
        1, static_cast<int64_t>(audio->sample_rate_hz) * chunk_ms / 1000);
    const int64_t total = audio->frames();
    const absl::Time start = absl::Now();
    for (int64_t frame = 0; frame < total; frame += frames_per_chunk) {
      const int64_t n = std::min(frames_per_chunk, total - frame);
      if (realtime) {
        // Send a chunk once its audio "has been recorded".
        const absl::Time due =
            start + absl::Seconds(static_cast<double>(frame + n) /
                                  audio->sample_rate_hz);
        absl::SleepFor(due - absl::Now());
      }
      v1::DiarizeRequest chunk;
      chunk.set_audio(
          reinterpret_cast<const char*>(audio->samples.data() +
                                        frame * audio->channel_count),
          static_cast<size_t>(n) * audio->channel_count * sizeof(int16_t));
      if (!stream->Write(chunk)) return;  // the server ended the call
      if (progress != nullptr) {
        progress->Sent(static_cast<double>(frame + n) / audio->sample_rate_hz);
      }
    }
    half_close_ns.store(absl::ToUnixNanos(absl::Now()));
    stream->WritesDone();
  });

  v1::DiarizeResponse response;
  bool have_final = false;
  v1::DiarizeResult final_result;
  while (stream->Read(&response)) {
    if (response.has_partial()) {
      if (progress != nullptr) {
        progress->Processed(response.partial().audio_processed_s());
      }
      if (show_partials) {
        if (progress != nullptr) progress->Clear();
        std::cerr << FormatPartial(response.partial());
      }
    } else if (response.has_final()) {
      const int64_t arrived_ns = absl::ToUnixNanos(absl::Now());
      final_result = response.final();
      have_final = true;
      const int64_t sent_ns = half_close_ns.load();
      if (absl::GetFlag(FLAGS_report_latency) && sent_ns > 0) {
        std::cerr << absl::StrFormat(
            "final result %.1f ms after the half-close\n",
            static_cast<double>(arrived_ns - sent_ns) / 1e6);
      }
    }
  }
  writer.join();
  if (progress != nullptr) progress->Clear();
  const grpc::Status s = stream->Finish();
  if (s.ok() && !have_final) {
    std::cerr << "diarize_client: the stream ended OK without a final result\n";
    return kExitOther;
  }
  if (s.ok()) return Emit(final_result, format);
  return Report(s);
}

int RunBatchMode(const std::shared_ptr<grpc::Channel>& channel,
                 const std::vector<char*>& args) {
  if (!absl::GetFlag(FLAGS_uri).empty() ||
      !absl::GetFlag(FLAGS_request_id).empty()) {
    std::cerr << "diarize_client: --uri and --request_id name one file; "
                 "batch mode (--out_dir) names each file after itself\n";
    return kExitUsage;
  }
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "stream" && mode != "unary") {
    std::cerr << "diarize_client: batch mode takes --mode stream or unary\n";
    return kExitUsage;
  }
  absl::StatusOr<std::vector<BatchInput>> inputs =
      ListBatchInputs(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!inputs.ok()) {
    std::cerr << "diarize_client: " << inputs.status().message() << "\n";
    return kExitUsage;
  }
  BatchOptions options;
  options.out_dir = absl::GetFlag(FLAGS_out_dir);
  options.jobs = absl::GetFlag(FLAGS_jobs);
  options.stream = mode == "stream";
  options.chunk_ms = absl::GetFlag(FLAGS_chunk_ms);
  options.write_json = absl::GetFlag(FLAGS_batch_json);
  options.deadline_s = absl::GetFlag(FLAGS_deadline_s);
  options.max_attempts = absl::GetFlag(FLAGS_max_attempts);
  options.max_retry_wait_s = absl::GetFlag(FLAGS_max_retry_wait_s);
  options.progress_every_s = absl::GetFlag(FLAGS_progress) ? 10 : 0;
  if (options.jobs < 1 || options.max_attempts < 1 || options.chunk_ms < 1) {
    std::cerr << "diarize_client: --jobs, --max_attempts and --chunk_ms must "
                 "be >= 1\n";
    return kExitUsage;
  }
  return RunBatch(channel, *inputs, options, BaseConfig);
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "diarize_client [flags] FILE   (see --help; exit codes in docs/api.md)");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  absl::StatusOr<OutputFormat> format =
      ParseOutputFormat(absl::GetFlag(FLAGS_output));
  if (!format.ok()) {
    std::cerr << "diarize_client: " << format.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<std::string> service_config = ServiceConfigFor(
      absl::GetFlag(FLAGS_lb_policy), absl::GetFlag(FLAGS_service_config));
  if (!service_config.ok()) {
    std::cerr << "diarize_client: " << service_config.status().message()
              << "\n";
    return kExitUsage;
  }
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(-1);
  channel_args.SetMaxSendMessageSize(-1);
  if (!service_config->empty()) {
    channel_args.SetServiceConfigJSON(*service_config);
  }
  const ChannelSecurity security{
      .tls = absl::GetFlag(FLAGS_tls),
      .tls_ca = absl::GetFlag(FLAGS_tls_ca),
      .tls_cert = absl::GetFlag(FLAGS_tls_cert),
      .tls_key = absl::GetFlag(FLAGS_tls_key),
      .tls_server_name = absl::GetFlag(FLAGS_tls_server_name),
      .token = absl::GetFlag(FLAGS_token),
      .token_file = absl::GetFlag(FLAGS_token_file)};
  absl::StatusOr<std::shared_ptr<grpc::Channel>> made =
      MakeChannel(absl::GetFlag(FLAGS_server), security, channel_args);
  if (!made.ok()) {
    std::cerr << "diarize_client: " << made.status().message() << "\n";
    return kExitUsage;
  }
  std::shared_ptr<grpc::Channel> channel = *std::move(made);
  auto stub = v1::Diarization::NewStub(channel);

  if (const double wait = absl::GetFlag(FLAGS_wait_for_serving_s); wait > 0) {
    if (!WaitForServing(channel, wait)) return kExitRetryLater;
    if (args.size() < 2 && !absl::GetFlag(FLAGS_info)) return kExitOk;
  }
  if (absl::GetFlag(FLAGS_info)) return RunInfo(*stub);
  if (const std::string enroll = absl::GetFlag(FLAGS_enroll); !enroll.empty()) {
    if (absl::GetFlag(FLAGS_out).empty() || args.size() != 1) {
      std::cerr << "diarize_client: --enroll FILE needs --out VOICEPRINT and "
                   "no other FILE\n";
      return kExitUsage;
    }
    return RunEnroll(*stub, enroll, absl::GetFlag(FLAGS_out));
  }
  if (absl::Status s = LoadKnownSpeakers(absl::GetFlag(FLAGS_known)).status();
      !s.ok()) {
    std::cerr << "diarize_client: " << s.message() << "\n";
    return kExitUsage;
  }
  if (!absl::GetFlag(FLAGS_out_dir).empty()) return RunBatchMode(channel, args);
  if (args.size() != 2) {
    std::cerr << "diarize_client: expected exactly one FILE (got "
              << args.size() - 1 << "); see --help\n";
    return kExitUsage;
  }
  const std::string path = args[1];
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode == "unary") return RunUnary(*stub, path, *format);
  if (mode == "stream") return RunStream(*stub, path, *format, false);
  if (mode == "realtime") return RunStream(*stub, path, *format, true);
  std::cerr << "diarize_client: --mode is '" << mode
            << "'; use stream, realtime or unary\n";
  return kExitUsage;
}

}  // namespace
}  // namespace diarization::client

int main(int argc, char** argv) {
  return diarization::client::Main(argc, argv);
}
