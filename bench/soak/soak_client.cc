// Soak client: keeps N Diarize streams open against a running server for T
// minutes, each sending a recording at the pace of a live source (--speed
// times real time) and starting over when its result is in. Records every
// stream's outcome (a result, or the status that ended it: a lost result is
// any stream that does not end with its final result), the latency of the
// final result after the end of the audio (the half-close), and the
// server's resident memory over time (from its /metrics endpoint). Prints
// one JSON summary line; exits 1 when any result was lost or memory grew
// more than --max_rss_growth_mb between the first and the last quarter of
// the samples taken after the first result (before it the server is still
// warming up: its networks allocate their fixed working memory on their
// first batches; rss_start_mb is the first sample, rss_max_mb the largest).
//
//   soak_client --target 127.0.0.1:50051 --metrics 127.0.0.1:9464 \
//     --audio rec.wav --streams 8 --minutes 2
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "diarization/v1/diarization.grpc.pb.h"
#include "engine/audio/audio.h"
#include "grpcpp/grpcpp.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "gRPC address");
ABSL_FLAG(std::string, metrics, "", "host:port of the server's /metrics");
ABSL_FLAG(std::string, audio, "", "Recording to send (WAV/FLAC/OGG)");
ABSL_FLAG(int, streams, 8, "Streams open at once");
ABSL_FLAG(double, minutes, 2.0, "How long to keep starting streams");
ABSL_FLAG(double, speed, 1.0, "Pace: audio seconds sent per wall second");
ABSL_FLAG(double, chunk_s, 0.1, "Audio per message, seconds");
ABSL_FLAG(int, connections, 4, "TCP connections the streams share");
ABSL_FLAG(double, max_rss_growth_mb, 200.0,
          "Fail when the median RSS of the last quarter exceeds the first "
          "quarter's by more than this");
ABSL_FLAG(double, rss_interval_s, 5.0, "RSS sampling interval");

namespace {

namespace v1 = diarization::v1;

std::string ToPcm16(const std::vector<float>& samples) {
  std::string out(samples.size() * 2, '\0');
  for (size_t i = 0; i < samples.size(); ++i) {
    const int16_t v = static_cast<int16_t>(
        std::lround(std::clamp(samples[i], -1.0f, 32767.0f / 32768.0f) *
                    32768.0f));
    out[2 * i] = static_cast<char>(v & 0xff);
    out[2 * i + 1] = static_cast<char>((v >> 8) & 0xff);
  }
  return out;
}

// process_resident_memory_bytes from GET /metrics; -1 on failure.
double ScrapeRss(const std::string& hostport) {
  const std::vector<std::string> parts = absl::StrSplit(hostport, ':');
  int port = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &port)) return -1;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, parts[0].c_str(), &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  const std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buffer[8192];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) {
    response.append(buffer, n);
  }
  close(fd);
  for (absl::string_view line : absl::StrSplit(response, '\n')) {
    if (absl::StartsWith(line, "process_resident_memory_bytes ")) {
      double v = -1;
      if (absl::SimpleAtod(line.substr(30), &v)) return v;
    }
  }
  return -1;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(p * v.size())) - 1;
  return v[std::min(i, v.size() - 1)];
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

struct Totals {
  absl::Mutex mu;
  int started = 0, completed = 0, lost = 0;
  // When the first final result arrived (the end of the warm-up).
  absl::Time first_result = absl::InfiniteFuture();
  std::vector<double> latency_s;
  std::vector<std::string> errors;  // first few
};

// One stream: config, paced audio, half-close, read to the end.
void OneStream(v1::Diarization::Stub& stub, const std::string& pcm,
               int index, Totals& totals) {
  grpc::ClientContext context;
  const double audio_s = pcm.size() / 2.0 / 16000.0;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(static_cast<int64_t>(
                           audio_s / absl::GetFlag(FLAGS_speed) + 600)));
  auto stream = stub.Diarize(&context);
  absl::Mutex mu;
  absl::Time end_of_audio = absl::InfiniteFuture();
  std::thread writer([&] {
    v1::DiarizeRequest first;
    v1::DiarizationConfig* c = first.mutable_config();
    c->mutable_audio()->set_encoding(v1::LINEAR16);
    c->mutable_audio()->set_sample_rate_hz(16000);
    c->set_request_id(absl::StrCat("soak-", index));
    c->mutable_options()->set_partial_results(true);
    c->mutable_options()->set_partial_interval_s(5);
    if (!stream->Write(first)) return;
    const size_t chunk = static_cast<size_t>(
        std::max(1.0, absl::GetFlag(FLAGS_chunk_s) * 16000)) * 2;
    const double speed = absl::GetFlag(FLAGS_speed);
    const absl::Time start = absl::Now();
    for (size_t at = 0; at < pcm.size(); at += chunk) {
      const double sent_s = (at + chunk) / 2.0 / 16000.0;
      absl::SleepFor(start + absl::Seconds(sent_s / speed) - absl::Now());
      v1::DiarizeRequest r;
      r.set_audio(pcm.substr(at, chunk));
      if (!stream->Write(r)) return;
    }
    stream->WritesDone();
    absl::MutexLock lock(&mu);
    end_of_audio = absl::Now();
  });
  bool got_final = false;
  double latency = -1;
  v1::DiarizeResponse response;
  while (stream->Read(&response)) {
    if (response.has_final()) {
      got_final = true;
      absl::MutexLock lock(&mu);
      latency = absl::ToDoubleSeconds(absl::Now() - end_of_audio);
    }
  }
  writer.join();
  const grpc::Status status = stream->Finish();
  absl::MutexLock lock(&totals.mu);
  if (status.ok() && got_final) {
    ++totals.completed;
    totals.first_result = std::min(totals.first_result, absl::Now());
    totals.latency_s.push_back(latency);
  } else {
    ++totals.lost;
    if (totals.errors.size() < 5) {
      totals.errors.push_back(absl::StrCat(status.error_code(), ": ",
                                           status.error_message()));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  auto wave = diarization::audio::DecodeFilePath(absl::GetFlag(FLAGS_audio));
  if (!wave.ok()) {
    std::fprintf(stderr, "soak_client: %s\n", wave.status().ToString().c_str());
    return 2;
  }
  const std::string pcm = ToPcm16(wave->samples);
  std::vector<std::unique_ptr<v1::Diarization::Stub>> stubs;
  for (int i = 0; i < std::max(1, absl::GetFlag(FLAGS_connections)); ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("diarization.soak_connection", i);
    stubs.push_back(v1::Diarization::NewStub(grpc::CreateCustomChannel(
        absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials(),
        args)));
  }
  Totals totals;
  const absl::Time start = absl::Now();
  const absl::Time stop_starting =
      start + absl::Seconds(absl::GetFlag(FLAGS_minutes) * 60);
  std::atomic<bool> done{false};
  std::vector<std::pair<double, double>> rss;  // (t, bytes)
  std::thread sampler([&] {
    const std::string metrics = absl::GetFlag(FLAGS_metrics);
    while (!done && !metrics.empty()) {
      const double v = ScrapeRss(metrics);
      if (v > 0) rss.emplace_back(absl::ToDoubleSeconds(absl::Now() - start), v);
      for (int i = 0; i < 10 && !done; ++i) {
        absl::SleepFor(absl::Seconds(absl::GetFlag(FLAGS_rss_interval_s) / 10));
      }
    }
  });
  std::vector<std::thread> workers;
  for (int w = 0; w < absl::GetFlag(FLAGS_streams); ++w) {
    workers.emplace_back([&, w] {
      for (int n = 0; absl::Now() < stop_starting; ++n) {
        {
          absl::MutexLock lock(&totals.mu);
          ++totals.started;
        }
        OneStream(*stubs[w % stubs.size()], pcm, w * 100000 + n, totals);
      }
    });
  }
  for (std::thread& t : workers) t.join();
  done = true;
  sampler.join();

  // RSS: median of the first and the last quarter of the samples taken
  // after the warm-up (the first result).
  const double warmup_s =
      absl::ToDoubleSeconds(std::min(totals.first_result, absl::Now()) - start);
  std::vector<std::pair<double, double>> warm;
  for (const auto& sample : rss) {
    if (sample.first >= warmup_s) warm.push_back(sample);
  }
  std::vector<double> first, last;
  for (size_t i = 0; i < warm.size(); ++i) {
    if (i < std::max<size_t>(1, warm.size() / 4)) {
      first.push_back(warm[i].second);
    }
    if (i >= warm.size() - std::max<size_t>(1, warm.size() / 4)) {
      last.push_back(warm[i].second);
    }
  }
  double max_rss = 0;
  for (const auto& s : rss) max_rss = std::max(max_rss, s.second);
  const double growth_mb =
      warm.empty() ? 0 : (Median(last) - Median(first)) / 1e6;
  const double wall_s = absl::ToDoubleSeconds(absl::Now() - start);
  absl::MutexLock lock(&totals.mu);
  std::printf(
      "{\"streams\":%d,\"minutes\":%.2f,\"audio_s\":%.2f,\"speed\":%.2f,"
      "\"started\":%d,\"completed\":%d,\"lost\":%d,"
      "\"final_latency_p50_s\":%.3f,\"final_latency_p99_s\":%.3f,"
      "\"final_latency_max_s\":%.3f,\"rss_start_mb\":%.1f,"
      "\"warmup_s\":%.1f,\"rss_first_quarter_mb\":%.1f,"
      "\"rss_last_quarter_mb\":%.1f,\"rss_max_mb\":%.1f,\"rss_samples\":%zu,"
      "\"rss_warm_samples\":%zu,\"rss_growth_mb\":%.1f,\"wall_s\":%.1f}\n",
      absl::GetFlag(FLAGS_streams), absl::GetFlag(FLAGS_minutes),
      wave->duration_s(), absl::GetFlag(FLAGS_speed), totals.started,
      totals.completed, totals.lost, Percentile(totals.latency_s, 0.5),
      Percentile(totals.latency_s, 0.99), Percentile(totals.latency_s, 1.0),
      rss.empty() ? -1 : rss.front().second / 1e6, warmup_s,
      warm.empty() ? -1 : Median(first) / 1e6,
      warm.empty() ? -1 : Median(last) / 1e6, max_rss / 1e6, rss.size(),
      warm.size(), growth_mb, wall_s);
  for (const std::string& e : totals.errors) {
    std::fprintf(stderr, "lost: %s\n", e.c_str());
  }
  const bool ok = totals.lost == 0 && totals.completed > 0 &&
                  growth_mb <= absl::GetFlag(FLAGS_max_rss_growth_mb);
  return ok ? 0 : 1;
}
