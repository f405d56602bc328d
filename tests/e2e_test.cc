// End to end: the real diarization_server binary on 127.0.0.1 with the CPU
// networks and a random-weights model directory made by the test, driven
// through gRPC. Random weights make the segments meaningless as
// diarization but fully deterministic for given audio, so agreement between
// paths (unary vs streaming, alone vs 16 at once) is exact. Audio is fresh
// random per run (the seed is printed).
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "diarization/v1/diarization.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "server/test_client_calls.h"
#include "tests/server_process.h"

namespace diarization::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kRate = 16000;

uint64_t Seed() {
  static const uint64_t seed = [] {
    const uint64_t s = std::random_device{}();
    std::fprintf(stderr, "e2e_test audio seed: %llu\n",
                 static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

// Speech-like 16-bit PCM: turns of 0.5-3 s, each a few harmonics at a random
// pitch with a syllable-rate envelope, some silence, a little noise.
std::string RandomSpeech(double seconds, uint64_t salt) {
  std::mt19937_64 rng(Seed() * 1000003 + salt);
  std::uniform_real_distribution<double> pitch(90, 260), turn(0.5, 3.0),
      unit(0, 1);
  std::normal_distribution<double> noise(0, 0.01);
  const int64_t n = static_cast<int64_t>(seconds * kRate);
  std::string out(static_cast<size_t>(n) * 2, '\0');
  int64_t i = 0;
  while (i < n) {
    const int64_t end = std::min<int64_t>(n, i + turn(rng) * kRate);
    const bool silent = unit(rng) < 0.2;
    const double f0 = pitch(rng), rate = 3 + 3 * unit(rng);
    for (; i < end; ++i) {
      const double t = static_cast<double>(i) / kRate;
      double v = noise(rng);
      if (!silent) {
        const double env = 0.5 + 0.5 * std::sin(2 * M_PI * rate * t);
        for (int h = 1; h <= 4; ++h) {
          v += env * 0.15 / h * std::sin(2 * M_PI * f0 * h * t);
        }
      }
      const int16_t s =
          static_cast<int16_t>(std::clamp(v, -1.0, 1.0) * 32767.0);
      out[2 * i] = static_cast<char>(s & 0xff);
      out[2 * i + 1] = static_cast<char>((s >> 8) & 0xff);
    }
  }
  return out;
}

v1::DiarizationConfig RawConfig(const std::string& id = "") {
  v1::DiarizationConfig c;
  c.mutable_audio()->set_encoding(v1::LINEAR16);
  c.mutable_audio()->set_sample_rate_hz(kRate);
  c.set_request_id(id);
  c.set_uri("e2e");
  return c;
}

using server::testing::ConfigRequest;
using server::testing::StreamOutcome;

grpc::Status Unary(v1::Diarization::Stub& stub,
                   const v1::DiarizationConfig& config,
                   const std::string& audio, v1::DiarizeResult* result,
                   double deadline_s = 0) {
  grpc::ClientContext context;
  if (deadline_s > 0) {
    context.set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::milliseconds(static_cast<int64_t>(deadline_s * 1000)));
  }
  return server::testing::DiarizeFile(stub, config, audio, result, &context);
}

StreamOutcome Stream(v1::Diarization::Stub& stub,
                     const v1::DiarizeRequest& first, const std::string& audio,
                     size_t chunk_bytes = 3200) {
  return server::testing::DiarizeStream(stub, first, audio, chunk_bytes);
}

v1::ServerInfo Info(v1::Diarization::Stub& stub) {
  grpc::ClientContext context;
  v1::ServerInfo info;
  EXPECT_TRUE(stub.GetInfo(&context, {}, &info).ok());
  return info;
}

// Polls until GetInfo's active_jobs is `n`.
// Polls GetInfo until `done` holds or `timeout_s` pass.
bool WaitForInfo(v1::Diarization::Stub& stub,
                 const std::function<bool(const v1::ServerInfo&)>& done,
                 double timeout_s) {
  const absl::Time end = absl::Now() + absl::Seconds(timeout_s);
  while (absl::Now() < end) {
    if (done(Info(stub))) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

bool WaitActiveJobs(v1::Diarization::Stub& stub, int n, double timeout_s) {
  return WaitForInfo(
      stub, [n](const v1::ServerInfo& info) { return info.active_jobs() == n; },
      timeout_s);
}

class E2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto models = RandomModelDir();
    ASSERT_TRUE(models.ok()) << models.status();
    auto server = ServerProcess::Start(*models, {"--threads=2"});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    stub_ = server_->NewStub();
  }

  static ServerProcess* server_;
  std::unique_ptr<v1::Diarization::Stub> stub_;
};

ServerProcess* E2eTest::server_ = nullptr;

TEST_F(E2eTest, GetInfoSaysRandomWeightsAndCpu) {
  v1::ServerInfo info = Info(*stub_);
  EXPECT_EQ(info.state(), "serving");
  ASSERT_EQ(info.models_size(), 3);
  EXPECT_EQ(info.models(0).role(), "segmentation");
  EXPECT_EQ(info.models(1).role(), "embedding");
  EXPECT_EQ(info.models(2).role(), "plda");
  EXPECT_TRUE(info.models(0).random_weights());
  EXPECT_TRUE(info.models(1).random_weights());
  EXPECT_EQ(info.models(0).sha256().size(), 64u);
  ASSERT_EQ(info.devices_size(), 1);
  EXPECT_EQ(info.devices(0).name(), "cpu");
  EXPECT_TRUE(info.devices(0).healthy());
  EXPECT_GT(info.limits().max_message_bytes(), 0);
  EXPECT_THAT(info.accepted_formats(),
              ::testing::IsSupersetOf({"raw: LINEAR16", "raw: MULAW",
                                       "raw: ALAW", "file: FLAC"}));
}

// A 16-bit stereo WAV file around interleaved samples.
std::string StereoWav(const std::string& left, const std::string& right) {
  std::string data;
  for (size_t i = 0; i + 1 < left.size() && i + 1 < right.size(); i += 2) {
    data += left.substr(i, 2);
    data += right.substr(i, 2);
  }
  auto u32 = [](uint32_t v) {
    return std::string{static_cast<char>(v & 0xff),
                       static_cast<char>((v >> 8) & 0xff),
                       static_cast<char>((v >> 16) & 0xff),
                       static_cast<char>((v >> 24) & 0xff)};
  };
  auto u16 = [](uint16_t v) {
    return std::string{static_cast<char>(v & 0xff),
                       static_cast<char>((v >> 8) & 0xff)};
  };
  return "RIFF" + u32(36 + data.size()) + "WAVEfmt " + u32(16) + u16(1) +
         u16(2) + u32(kRate) + u32(kRate * 4) + u16(4) + u16(16) + "data" +
         u32(data.size()) + data;
}

// SELECT_CHANNEL (issue 41): one channel of a stereo upload, raw or WAV,
// gives exactly the RTTM of that channel sent alone; a channel the file
// does not have is INVALID_ARGUMENT.
TEST_F(E2eTest, SelectChannelIsThatChannelAlone) {
  const std::string left = RandomSpeech(6.0, 41);
  const std::string right = RandomSpeech(6.0, 42);
  const std::string wav = StereoWav(left, right);
  std::string interleaved = wav.substr(44);
  v1::DiarizeResult alone[2];
  for (int c = 0; c < 2; ++c) {
    grpc::Status s = Unary(*stub_, RawConfig(), c == 0 ? left : right,
                           &alone[c]);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_GT(alone[c].segments_size(), 0);
  }
  ASSERT_NE(alone[0].rttm(), alone[1].rttm());
  for (int c = 0; c < 2; ++c) {
    v1::DiarizationConfig raw = RawConfig();
    raw.mutable_audio()->set_channel_count(2);
    raw.mutable_audio()->set_channel_policy(v1::SELECT_CHANNEL);
    raw.mutable_audio()->set_channel_index(c);
    v1::DiarizeResult r;
    grpc::Status s = Unary(*stub_, raw, interleaved, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(r.rttm(), alone[c].rttm()) << "raw, channel " << c;
    v1::DiarizationConfig file = raw;
    file.mutable_audio()->set_encoding(v1::ENCODED);
    s = Unary(*stub_, file, wav, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(r.rttm(), alone[c].rttm()) << "WAV, channel " << c;
  }
  v1::DiarizationConfig third = RawConfig();
  third.mutable_audio()->set_encoding(v1::ENCODED);
  third.mutable_audio()->set_channel_policy(v1::SELECT_CHANNEL);
  third.mutable_audio()->set_channel_index(2);
  v1::DiarizeResult r;
  grpc::Status s = Unary(*stub_, third, wav, &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("2-channel audio"));
}

// The RTTM of one channel as SEPARATE reports it: speakers "ch<c>:...",
// channel column c + 1.
std::vector<std::string> AsChannel(const std::string& rttm, int c) {
  std::vector<std::string> lines;
  std::istringstream in(rttm);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    if (f.size() != 10) {
      ADD_FAILURE() << line;
      continue;
    }
    f[2] = std::to_string(c + 1);
    f[7] = "ch" + std::to_string(c) + ":" + f[7];
    lines.push_back(absl::StrJoin(f, " "));
  }
  return lines;
}

std::vector<std::string> Lines(const std::string& rttm) {
  std::vector<std::string> lines = absl::StrSplit(rttm, '\n',
                                                  absl::SkipEmpty());
  return lines;
}

// SEPARATE (issue 41): each channel diarized on its own and merged; each
// channel's speakers stay on their channel (labels and RTTM channel), and
// hints apply per channel.
TEST_F(E2eTest, SeparateChannelsKeepsEachChannelsSpeakers) {
  const std::string left = RandomSpeech(6.0, 43);
  const std::string right = RandomSpeech(6.0, 44);
  const std::string wav = StereoWav(left, right);
  for (const bool one_speaker : {false, true}) {
    SCOPED_TRACE(one_speaker);
    v1::DiarizationConfig mono = RawConfig();
    if (one_speaker) mono.mutable_speakers()->set_num_speakers(1);
    v1::DiarizeResult alone[2];
    for (int c = 0; c < 2; ++c) {
      grpc::Status s = Unary(*stub_, mono, c == 0 ? left : right, &alone[c]);
      ASSERT_TRUE(s.ok()) << s.error_message();
      ASSERT_GT(alone[c].segments_size(), 0);
    }
    std::vector<std::string> expected = AsChannel(alone[0].rttm(), 0);
    for (const std::string& line : AsChannel(alone[1].rttm(), 1)) {
      expected.push_back(line);
    }
    std::sort(expected.begin(), expected.end());
    for (const bool encoded : {false, true}) {
      SCOPED_TRACE(encoded);
      v1::DiarizationConfig config = mono;
      config.mutable_audio()->set_channel_count(2);
      config.mutable_audio()->set_channel_policy(v1::SEPARATE);
      if (encoded) config.mutable_audio()->set_encoding(v1::ENCODED);
      v1::DiarizeResult r;
      grpc::Status s =
          Unary(*stub_, config, encoded ? wav : wav.substr(44), &r);
      ASSERT_TRUE(s.ok()) << s.error_message();
      std::vector<std::string> got = Lines(r.rttm());
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, expected);
      EXPECT_EQ(r.speaker_count(),
                alone[0].speaker_count() + alone[1].speaker_count());
      for (const v1::Segment& seg : r.segments()) {
        EXPECT_TRUE(absl::StartsWith(seg.speaker(), "ch0:SPEAKER_") ||
                    absl::StartsWith(seg.speaker(), "ch1:SPEAKER_"))
            << seg.speaker();
      }
      if (one_speaker) EXPECT_EQ(r.speaker_count(), 2);
    }
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Telephony (issue 41): the same 8 kHz stereo mu-law audio streamed raw as
// MULAW (odd chunks that split frames) and uploaded as a mu-law WAV file
// (both made by sox) gives one RTTM; so does A-law, raw unary.
TEST_F(E2eTest, TelephonyStreamAndFileAgree) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string tmp = dir != nullptr ? dir : "/tmp";
  const std::string pcm = tmp + "/tel.raw";
  {
    const std::string left = RandomSpeech(8.0, 45);
    const std::string right = RandomSpeech(8.0, 46);
    const std::string wav = StereoWav(left, right);
    std::ofstream(pcm, std::ios::binary) << wav.substr(44);
  }
  auto sox = [&](const std::string& args) {
    const std::string command = "sox -D -t s16 -r 16000 -c 2 " + pcm + " " +
                                args;
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  };
  sox("-r 8000 -t ul " + tmp + "/tel.ul");
  sox("-r 8000 -t al " + tmp + "/tel.al");
  sox("-r 8000 -e u-law " + tmp + "/tel_ulaw.wav");
  v1::DiarizationConfig file = RawConfig("tel-file");
  file.mutable_audio()->set_encoding(v1::ENCODED);
  v1::DiarizeResult from_file;
  grpc::Status s =
      Unary(*stub_, file, ReadFile(tmp + "/tel_ulaw.wav"), &from_file);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_GT(from_file.segments_size(), 0);
  EXPECT_NEAR(from_file.audio_s(), 8.0, 1e-3);

  v1::DiarizationConfig raw = RawConfig("tel-stream");
  raw.mutable_audio()->set_encoding(v1::MULAW);
  raw.mutable_audio()->set_sample_rate_hz(8000);
  raw.mutable_audio()->set_channel_count(2);
  StreamOutcome streamed =
      Stream(*stub_, ConfigRequest(raw), ReadFile(tmp + "/tel.ul"), 1601);
  ASSERT_TRUE(streamed.status.ok()) << streamed.status.error_message();
  ASSERT_TRUE(streamed.final_result.has_value());
  EXPECT_EQ(streamed.final_result->rttm(), from_file.rttm());

  // A-law differs from mu-law only by quantisation; it runs, raw unary.
  raw.mutable_audio()->set_encoding(v1::ALAW);
  v1::DiarizeResult alaw;
  s = Unary(*stub_, raw, ReadFile(tmp + "/tel.al"), &alaw);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_NEAR(alaw.audio_s(), 8.0, 1e-3);
}

TEST_F(E2eTest, StreamingAndUnaryAgree) {
  const std::string audio = RandomSpeech(14.3, 1);
  v1::DiarizeResult unary;
  grpc::Status s = Unary(*stub_, RawConfig("unary-1"), audio, &unary);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(unary.request_id(), "unary-1");
  EXPECT_NEAR(unary.audio_s(), 14.3, 1e-3);
  EXPECT_EQ(unary.device(), "cpu");
  EXPECT_GT(unary.rtfx(), 0);
  ASSERT_GT(unary.segments_size(), 0) << "random weights still give speech";

  v1::DiarizationConfig c = RawConfig("stream-1");
  c.mutable_options()->set_partial_results(true);
  c.mutable_options()->set_partial_interval_s(1);
  StreamOutcome streamed = Stream(*stub_, ConfigRequest(c), audio, 3202);
  ASSERT_TRUE(streamed.status.ok()) << streamed.status.error_message();
  ASSERT_TRUE(streamed.final_result.has_value());
  EXPECT_EQ(streamed.final_result->request_id(), "stream-1");
  EXPECT_EQ(streamed.final_result->rttm(), unary.rttm());
  EXPECT_EQ(streamed.final_result->segments_size(), unary.segments_size());
  for (const v1::PartialResult& p : streamed.partials) {
    EXPECT_TRUE(p.provisional());
    EXPECT_EQ(p.request_id(), "stream-1");
  }
}

TEST_F(E2eTest, SixteenConcurrentStreamsNoLostOrMixedResults) {
  constexpr int kAudios = 4, kStreams = 16;
  std::vector<std::string> audios;
  std::vector<std::string> expected_rttm;
  for (int a = 0; a < kAudios; ++a) {
    audios.push_back(RandomSpeech(5.0 + a, 100 + a));
    v1::DiarizeResult r;
    grpc::Status s = Unary(*stub_, RawConfig(), audios[a], &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    expected_rttm.push_back(r.rttm());
  }
  std::vector<StreamOutcome> outcomes(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      auto stub = server_->NewStub();
      outcomes[i] =
          Stream(*stub, ConfigRequest(RawConfig(absl::StrFormat("c-%d", i))),
                 audios[i % kAudios], 1600 * (1 + i % 3));
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(outcomes[i].status.ok()) << outcomes[i].status.error_message();
    ASSERT_TRUE(outcomes[i].final_result.has_value());
    EXPECT_EQ(outcomes[i].final_result->request_id(),
              absl::StrFormat("c-%d", i));
    EXPECT_NEAR(outcomes[i].final_result->audio_s(), 5.0 + i % kAudios, 1e-3);
    EXPECT_EQ(outcomes[i].final_result->rttm(), expected_rttm[i % kAudios]);
  }
}

TEST_F(E2eTest, CancellationMidStream) {
  grpc::ClientContext context;
  auto stream = stub_->Diarize(&context);
  ASSERT_TRUE(stream->Write(ConfigRequest(RawConfig("cancel-me"))));
  v1::DiarizeRequest chunk;
  chunk.set_audio(RandomSpeech(12, 7));
  ASSERT_TRUE(stream->Write(chunk));
  ASSERT_TRUE(WaitActiveJobs(*stub_, 1, 30));
  context.TryCancel();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(WaitActiveJobs(*stub_, 0, 30)) << "the job was not cancelled";
  // The call's slot is released when its reactor is deleted, just after the
  // client has seen the status.
  EXPECT_TRUE(WaitForInfo(
      *stub_, [](const v1::ServerInfo& info) { return info.open_calls() == 0; },
      10))
      << "open_calls is still " << Info(*stub_).open_calls();
}

TEST_F(E2eTest, DeadlineExceeded) {
  v1::DiarizeResult r;
  grpc::Status s = Unary(*stub_, RawConfig(), RandomSpeech(20, 8), &r, 0.2);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(WaitActiveJobs(*stub_, 0, 30));
}

TEST_F(E2eTest, MalformedConfigsAndAudio) {
  v1::DiarizeResult r;
  // Unary: not a file.
  v1::DiarizationConfig encoded;
  encoded.mutable_audio()->set_encoding(v1::ENCODED);
  grpc::Status s = Unary(*stub_, encoded, "RIFF....garbage", &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Unary: a partial 16-bit frame.
  s = Unary(*stub_, RawConfig(), RandomSpeech(1, 9) + "x", &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Unary: bad request_id.
  v1::DiarizationConfig bad_id = RawConfig("white space");
  s = Unary(*stub_, bad_id, RandomSpeech(1, 9), &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("request_id"));
  // Stream: audio before config.
  v1::DiarizeRequest audio_first;
  audio_first.set_audio(RandomSpeech(1, 9));
  StreamOutcome o = Stream(*stub_, audio_first, "");
  EXPECT_EQ(o.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Stream: 3 channels of 48 kHz but hints contradict.
  v1::DiarizationConfig c = RawConfig();
  c.mutable_audio()->set_sample_rate_hz(48000);
  c.mutable_audio()->set_channel_count(3);
  c.mutable_speakers()->set_num_speakers(2);
  c.mutable_speakers()->set_max_speakers(1);
  o = Stream(*stub_, ConfigRequest(c), RandomSpeech(1, 9));
  EXPECT_EQ(o.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(o.status.error_message(), HasSubstr("max_speakers"));
  // Stream: FLOAT32 with infinities.
  c = RawConfig();
  c.mutable_audio()->set_encoding(v1::FLOAT32);
  std::vector<float> samples(8000, 0.25f);
  samples[100] = INFINITY;
  o = Stream(*stub_, ConfigRequest(c),
             std::string(reinterpret_cast<const char*>(samples.data()),
                         samples.size() * sizeof(float)));
  EXPECT_EQ(o.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // The server is fine afterwards.
  EXPECT_EQ(Info(*stub_).state(), "serving");
  EXPECT_TRUE(WaitActiveJobs(*stub_, 0, 30));
}

TEST(E2eLimits, FullQueueIsResourceExhausted) {
  auto models = RandomModelDir();
  ASSERT_TRUE(models.ok()) << models.status();
  auto server = ServerProcess::Start(
      *models, {"--max_backlog_audio_s=20", "--max_request_backlog_share=1",
                "--threads=1"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = (*server)->NewStub();
  v1::DiarizeResult r;
  // Longer than the whole backlog: never admissible.
  grpc::Status s = Unary(*stub, RawConfig(), RandomSpeech(25, 10), &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("backlog"));

  // 18 s held by an open stream (not half-closed), then 10 s more.
  grpc::ClientContext context;
  auto stream = stub->Diarize(&context);
  ASSERT_TRUE(stream->Write(ConfigRequest(RawConfig())));
  v1::DiarizeRequest chunk;
  chunk.set_audio(RandomSpeech(18, 11));
  ASSERT_TRUE(stream->Write(chunk));
  const absl::Time end = absl::Now() + absl::Seconds(30);
  while (Info(*stub).backlog_audio_s() < 10 && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  grpc::ClientContext unary_context;
  v1::DiarizeFileRequest request;
  *request.mutable_config() = RawConfig();
  request.set_audio(RandomSpeech(10, 12));
  s = stub->DiarizeFile(&unary_context, request, &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_NE(unary_context.GetServerTrailingMetadata().find("retry-after-s"),
            unary_context.GetServerTrailingMetadata().end());
  context.TryCancel();
  stream->Finish();
}

// Audio at the pace of a live source (100 ms every 100 ms): windows reach the
// engine one at a time, so batches are small and partial clusterings run
// between them. The result must equal the unary one.
TEST(E2eRealtime, PacedStreamMatchesUnary) {
  auto models = RandomModelDir();
  ASSERT_TRUE(models.ok()) << models.status();
  auto server = ServerProcess::Start(*models, {});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = (*server)->NewStub();
  const std::string audio = RandomSpeech(12.0, 21);
  v1::DiarizeResult unary;
  grpc::Status s = Unary(*stub, RawConfig(), audio, &unary);
  ASSERT_TRUE(s.ok()) << s.error_message();

  grpc::ClientContext context;
  auto stream = stub->Diarize(&context);
  std::thread writer([&] {
    v1::DiarizationConfig c = RawConfig("paced");
    c.mutable_options()->set_partial_results(true);
    c.mutable_options()->set_partial_interval_s(2);
    if (!stream->Write(ConfigRequest(c))) return;
    constexpr size_t kChunk = kRate / 10 * 2;  // 100 ms of 16-bit samples
    const absl::Time start = absl::Now();
    for (size_t i = 0; i < audio.size(); i += kChunk) {
      absl::SleepFor(start + absl::Milliseconds(100 * (i / kChunk + 1)) -
                     absl::Now());
      v1::DiarizeRequest r;
      r.set_audio(audio.substr(i, kChunk));
      if (!stream->Write(r)) return;
    }
    stream->WritesDone();
  });
  v1::DiarizeResponse response;
  std::optional<v1::DiarizeResult> final_result;
  int partials = 0;
  while (stream->Read(&response)) {
    if (response.has_partial()) ++partials;
    if (response.has_final()) final_result = response.final();
  }
  writer.join();
  s = stream->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message() << "\nserver log:\n"
                      << (*server)->Log();
  ASSERT_TRUE(final_result.has_value());
  EXPECT_EQ(final_result->rttm(), unary.rttm());
  EXPECT_EQ(final_result->request_id(), "paced");
  std::fprintf(stderr, "paced stream: %d partial results\n", partials);
}

// The first request of a fresh server is one stream shorter than a window:
// its only (zero-padded) window reaches the networks alone (batch 1).
TEST(E2eShort, FirstRequestIsOneShortStream) {
  auto models = RandomModelDir();
  ASSERT_TRUE(models.ok()) << models.status();
  auto server = ServerProcess::Start(*models, {});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = (*server)->NewStub();
  const std::string audio = RandomSpeech(6.0, 31);
  StreamOutcome streamed =
      Stream(*stub, ConfigRequest(RawConfig("short")), audio);
  ASSERT_TRUE(streamed.status.ok())
      << streamed.status.error_message() << "\nserver log:\n"
      << (*server)->Log();
  ASSERT_TRUE(streamed.final_result.has_value());
  EXPECT_NEAR(streamed.final_result->audio_s(), 6.0, 1e-3);
  v1::DiarizeResult unary;
  grpc::Status s = Unary(*stub, RawConfig(), audio, &unary);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(streamed.final_result->rttm(), unary.rttm());
}

TEST(E2eDrain, SigtermDrainsUnderLoadAndExitsZero) {
  auto models = RandomModelDir();
  ASSERT_TRUE(models.ok()) << models.status();
  auto started = ServerProcess::Start(*models, {"--drain_timeout_s=120"});
  ASSERT_TRUE(started.ok()) << started.status();
  ServerProcess& server = **started;
  auto stub = server.NewStub();

  constexpr int kStreams = 3;
  const std::string audio = RandomSpeech(12, 13);
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<
      grpc::ClientReaderWriter<v1::DiarizeRequest, v1::DiarizeResponse>>>
      streams;
  for (int i = 0; i < kStreams; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    streams.push_back(stub->Diarize(contexts.back().get()));
    ASSERT_TRUE(streams.back()->Write(ConfigRequest(RawConfig())));
    v1::DiarizeRequest chunk;
    chunk.set_audio(audio);
    ASSERT_TRUE(streams.back()->Write(chunk));
  }
  ASSERT_TRUE(WaitActiveJobs(*stub, kStreams, 30));

  server.Signal(SIGTERM);
  // Health turns NOT_SERVING and new calls are refused...
  auto health = grpc::health::v1::Health::NewStub(server.channel());
  bool not_serving = false;
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (!not_serving && absl::Now() < end) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckResponse response;
    not_serving =
        health->Check(&context, {}, &response).ok() &&
        response.status() == grpc::health::v1::HealthCheckResponse::NOT_SERVING;
    if (!not_serving) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(not_serving);
  v1::DiarizeResult r;
  grpc::Status s = Unary(*stub, RawConfig(), audio, &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);

  // ... while the open streams finish normally.
  for (int i = 0; i < kStreams; ++i) {
    streams[i]->WritesDone();
    v1::DiarizeResponse response;
    bool got_final = false;
    while (streams[i]->Read(&response)) got_final |= response.has_final();
    grpc::Status st = streams[i]->Finish();
    EXPECT_TRUE(st.ok()) << i << ": " << st.error_message();
    EXPECT_TRUE(got_final) << i;
  }
  EXPECT_EQ(server.Wait(), 0) << server.Log();
  EXPECT_THAT(server.Log(), HasSubstr("drain_finished"));
}

}  // namespace
}  // namespace diarization::testing
