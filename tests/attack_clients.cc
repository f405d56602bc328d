#include "tests/attack_clients.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/test_client_calls.h"

namespace diarization::testing {

using server::testing::ConfigRequest;

// ATTACK_DEVICE: the server's --device (default cpu).
std::string Device() {
  const char* d = std::getenv("ATTACK_DEVICE");
  return d != nullptr && *d != '\0' ? d : "cpu";
}

bool OnGpu() { return absl::StartsWith(Device(), "cuda"); }

// ATTACK_VICTIM_BOUND_S: a flat bound for the victim's final result after
// its end, instead of one relative to its latency alone.
std::optional<double> FlatVictimBound() {
  const char* b = std::getenv("ATTACK_VICTIM_BOUND_S");
  double v = 0;
  if (b == nullptr || !absl::SimpleAtod(b, &v) || v <= 0) return std::nullopt;
  return v;
}

uint64_t Seed() {
  static const uint64_t seed = [] {
    const uint64_t s = std::random_device{}();
    std::fprintf(stderr, "attack_test audio seed: %llu\n",
                 static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

// 16-bit PCM at 16 kHz: random tones in random turns with a little noise
// (what the audio says does not matter here, only that it is audio).
std::string Pcm(double seconds, uint64_t salt) {
  std::mt19937_64 rng(Seed() * 7919 + salt);
  std::uniform_real_distribution<double> pitch(90, 300), turn(0.5, 3), u(0, 1);
  std::normal_distribution<double> noise(0, 0.01);
  const int64_t n = static_cast<int64_t>(seconds * kRate);
  std::string out(static_cast<size_t>(n) * 2, '\0');
  double f0 = pitch(rng);
  int64_t next_turn = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i >= next_turn) {
      f0 = pitch(rng);
      next_turn = i + static_cast<int64_t>(turn(rng) * kRate);
    }
    const double t = static_cast<double>(i) / kRate;
    const double v =
        0.3 * std::sin(2 * M_PI * f0 * t) * (0.6 + 0.4 * std::sin(9 * t)) +
        noise(rng);
    const int16_t s = static_cast<int16_t>(std::clamp(v, -1.0, 1.0) * 32767);
    out[2 * i] = static_cast<char>(s & 0xff);
    out[2 * i + 1] = static_cast<char>((s >> 8) & 0xff);
  }
  return out;
}

v1::DiarizationConfig RawConfig(const std::string& id) {
  v1::DiarizationConfig c;
  c.mutable_audio()->set_encoding(v1::LINEAR16);
  c.mutable_audio()->set_sample_rate_hz(kRate);
  c.set_request_id(id);
  return c;
}

std::chrono::system_clock::time_point In(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// A channel with its own TCP connection (gRPC otherwise shares one
// connection between channels to the same address).
std::shared_ptr<grpc::Channel> OwnConnection(const ServerProcess& server,
                                             int id) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("diarization.test_connection", id);
  return grpc::CreateCustomChannel(server.address(),
                                   grpc::InsecureChannelCredentials(), args);
}

// The victim: `seconds` of audio at the pace of a live source (100 ms every
// 100 ms) on its own connection.
VictimOutcome PacedStream(const ServerProcess& server, double seconds,
                          const std::string& id) {
  return PacedStreamTo(server.address(), seconds, id);
}

VictimOutcome PacedStreamTo(const std::string& address, double seconds,
                            const std::string& id) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("diarization.test_connection", 1000);
  auto stub = v1::Diarization::NewStub(grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  context.set_deadline(In(seconds + 60));
  auto stream = stub->Diarize(&context);
  const std::string audio = Pcm(seconds, 77);
  absl::Time end_of_audio = absl::InfiniteFuture();
  absl::Mutex mu;
  std::thread writer([&] {
    if (!stream->Write(ConfigRequest(RawConfig(id)))) return;
    constexpr size_t kChunk = kRate / 10 * 2;
    const absl::Time start = absl::Now();
    for (size_t i = 0; i < audio.size(); i += kChunk) {
      absl::SleepFor(start + absl::Milliseconds(100 * (i / kChunk + 1)) -
                     absl::Now());
      v1::DiarizeRequest r;
      r.set_audio(audio.substr(i, kChunk));
      if (!stream->Write(r)) return;
    }
    stream->WritesDone();
    absl::MutexLock lock(&mu);
    end_of_audio = absl::Now();
  });
  VictimOutcome out;
  v1::DiarizeResponse response;
  while (stream->Read(&response)) {
    if (response.has_final()) {
      const absl::Time now = absl::Now();
      out.final_result = response.final();
      absl::MutexLock lock(&mu);
      out.final_after_end_s = absl::ToDoubleSeconds(now - end_of_audio);
    }
  }
  writer.join();
  out.status = stream->Finish();
  return out;
}

// The victim's final result may come at most 1 s (plus half its latency
// alone, for the noise of a shared machine; `share` times it where the
// victim fairly shares the device with another job) later than it does with
// nothing else running (`baseline_s`, measured on the same server just before
// the attack: on a shared 2-core machine that alone is 1-5 s). With
// ATTACK_VICTIM_BOUND_S (the GPU run): at most that long after its end,
// whatever its latency alone.
void ExpectVictimServed(const VictimOutcome& v, double seconds,
                        const ServerProcess& server, double baseline_s,
                        double share) {
  ASSERT_TRUE(v.status.ok()) << v.status.error_message() << "\n"
                             << server.Log();
  ASSERT_TRUE(v.final_result.has_value());
  EXPECT_NEAR(v.final_result->audio_s(), seconds, 1e-3);
  std::fprintf(stderr,
               "victim: final result %.3f s after its end (alone: %.3f s)\n",
               v.final_after_end_s, baseline_s);
  if (const std::optional<double> flat = FlatVictimBound()) {
    EXPECT_LE(v.final_after_end_s, *flat)
        << "the paced stream's final result came more than " << *flat
        << " s after its end (" << Device() << ")";
    return;
  }
  if (baseline_s < 0) return;  // only "served", nothing ran alongside
  EXPECT_LE(v.final_after_end_s, (0.5 + share) * baseline_s + 1.0)
      << "the paced stream's final result came too late";
}

v1::ServerInfo Info(const ServerProcess& server) {
  auto stub = server.NewStub();
  grpc::ClientContext context;
  context.set_deadline(In(10));
  v1::ServerInfo info;
  EXPECT_TRUE(stub->GetInfo(&context, {}, &info).ok());
  return info;
}

bool WaitFor(const ServerProcess& server,
             const std::function<bool(const v1::ServerInfo&)>& done,
             double timeout_s) {
  const absl::Time end = absl::Now() + absl::Seconds(timeout_s);
  while (absl::Now() < end) {
    if (done(Info(server))) return true;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return false;
}

bool Idle(const v1::ServerInfo& info) {
  return info.active_jobs() == 0 && info.open_calls() == 0;
}

// The JSON request-log lines of `method` in the server's log.
std::vector<std::string> LogLines(const ServerProcess& server,
                                  const std::string& method) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(server.Log(), '\n')) {
    if (absl::StrContains(line, absl::StrCat("\"method\":\"", method, "\""))) {
      lines.emplace_back(line);
    }
  }
  return lines;
}

// Every line of the log is JSON (starts with '{'), apart from the marker
// ServerProcess::Log adds when the process has ended.
void ExpectOnlyJsonLines(const ServerProcess& server) {
  for (absl::string_view line : absl::StrSplit(server.Log(), '\n')) {
    if (line.empty() || absl::StartsWith(line, "[server process")) continue;
    EXPECT_TRUE(absl::StartsWith(line, "{")) << "non-JSON log line: " << line;
  }
}

}  // namespace diarization::testing
