// The gRPC server over loopback with the real engine and fake networks
// (engine/runtime/fake_models.h): results are known by construction from the
// audio, so mixed-up, lost or misplaced results fail. Covers GetInfo, health
// through the standard protocol, unary = streaming, partial results,
// validation, cancellation, deadlines, the stream-duration and concurrency
// limits, admission control (RESOURCE_EXHAUSTED with a retry hint), and
// draining under load. The end-to-end tests with the real CPU networks are
// in tests/.
#include "server/grpc_server.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "diarization/v1/diarization.grpc.pb.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/fake_models.h"
#include "engine/runtime/metrics.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "server/auth/server_credentials.h"
#include "server/auth/token_auth.h"
#include "server/auth/token_file.h"
#include "server/auth/token_store.h"
#include "server/test_client_calls.h"
#include "testing/metric_value.h"

namespace diarization::server {
namespace {

using ::diarization::testing::MetricValue;
using runtime::testing::FakeControl;
using testing::ConfigRequest;
using ::testing::HasSubstr;
using testing::StreamOutcome;

constexpr int kRate = 16000;
constexpr int kFrames = 589;
constexpr int kSpeakers = 3;

// 16-bit PCM at 16 kHz whose level makes the fake segmentation see powerset
// class `cls` (1, 2, 3 = local speaker 0, 1, 2 alone) in every frame.
std::string Pcm16(double seconds, int cls) {
  const int64_t n = static_cast<int64_t>(std::llround(seconds * kRate));
  const int16_t level =
      static_cast<int16_t>(std::lround((cls + 0.5) / 7.0 * 32768.0));
  std::string bytes(static_cast<size_t>(n) * 2, '\0');
  for (int64_t i = 0; i < n; ++i) {
    const int16_t v = (i % 2 == 0) ? level : static_cast<int16_t>(-level);
    bytes[2 * i] = static_cast<char>(v & 0xff);
    bytes[2 * i + 1] = static_cast<char>((v >> 8) & 0xff);
  }
  return bytes;
}

// The host stage, replaced by one whose output is known by construction:
// for every window c and local speaker s active in any frame, the segment
// [c·step, c·step + 10 s) labelled SPEAKER_0s.
absl::StatusOr<pipeline::DiarizationOutput> WindowCluster(
    std::span<const float> seg, std::span<const float> /*emb*/, int num_windows,
    const pipeline::PipelineConfig& config,
    const pipeline::SpeakerHints& /*hints*/) {
  pipeline::DiarizationOutput out;
  const double step_s = static_cast<double>(config.step_samples) / kRate;
  for (int c = 0; c < num_windows; ++c) {
    for (int s = 0; s < kSpeakers; ++s) {
      bool active = false;
      for (int f = 0; f < kFrames && !active; ++f) {
        active =
            seg[(static_cast<size_t>(c) * kFrames + f) * kSpeakers + s] > 0.5f;
      }
      if (!active) continue;
      Segment segment;
      segment.start_s = c * step_s;
      segment.end_s = c * step_s + 10.0;
      segment.speaker = absl::StrFormat("SPEAKER_%02d", s);
      out.segments.push_back(segment);
      out.exclusive_segments.push_back(segment);
    }
  }
  for (int s = 0; s < kSpeakers; ++s) {
    out.labels.push_back(absl::StrFormat("SPEAKER_%02d", s));
    out.centroids.push_back(std::vector<float>(256, static_cast<float>(s)));
  }
  return out;
}

// Expected by construction: whole seconds ≥ 10 with a 1 s step give
// duration − 9 windows, each with the one speaker of the audio.
void ExpectWindows(const v1::DiarizeResult& r, int seconds, int cls) {
  ASSERT_EQ(r.segments_size(), seconds - 9) << r.ShortDebugString();
  for (int c = 0; c < r.segments_size(); ++c) {
    EXPECT_DOUBLE_EQ(r.segments(c).start_s(), c);
    EXPECT_DOUBLE_EQ(r.segments(c).end_s(), c + 10.0);
    EXPECT_EQ(r.segments(c).speaker(),
              absl::StrFormat("SPEAKER_%02d", cls - 1));
  }
  EXPECT_EQ(r.speaker_count(), 1);
  EXPECT_NEAR(r.audio_s(), seconds, 1e-9);
}

class ServerTest : public ::testing::Test {
 protected:
  void Start(ServiceLimits limits = {}, double max_backlog_audio_s = 3600,
             bool with_engine = true) {
    control_ = std::make_shared<FakeControl>();
    registry_ = std::make_shared<prometheus::Registry>();
    auto metrics = runtime::Metrics::Create(registry_, {"test", "test"});
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    metrics_ = *metrics;
    GrpcServerOptions options;
    options.listen = "127.0.0.1:0";
    options.limits = limits;
    options.limits.max_backlog_audio_s = max_backlog_audio_s;
    options.version = "test";
    if (!token_file_json_.empty()) {
      auto table = auth::ParseTokenFile(token_file_json_);
      ASSERT_TRUE(table.ok()) << table.status();
      options.tokens = auth::TokenStore::FromTable(*std::move(table));
      auto credentials = auth::MakeServerCredentials(
          {}, options.listen,
          std::make_shared<auth::TokenAuthProcessor>(options.tokens));
      ASSERT_TRUE(credentials.ok()) << credentials.status();
      options.credentials = *std::move(credentials);
    }
    auto server = GrpcServer::Start(options, metrics_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_GT(server_->port(), 0);
    channel_ =
        grpc::CreateChannel(absl::StrFormat("127.0.0.1:%d", server_->port()),
                            grpc::InsecureChannelCredentials());
    stub_ = v1::Diarization::NewStub(channel_);
    health_ = grpc::health::v1::Health::NewStub(channel_);
    max_backlog_audio_s_ = max_backlog_audio_s;
    if (with_engine) StartEngine();
  }

  void StartEngine() {
    std::vector<runtime::Device> devices(1);
    devices[0].name = "fake";
    devices[0].description = "fake networks";
    devices[0].segmentation =
        std::make_unique<runtime::testing::FakeSegmentationModel>(control_);
    devices[0].embedding =
        std::make_unique<runtime::testing::FakeEmbeddingModel>(control_);
    runtime::EngineOptions eo;
    eo.segmentation_batch_size = 4;
    eo.embedding_batch_size = 4;
    eo.max_backlog_audio_s = max_backlog_audio_s_;
    eo.cluster_function = WindowCluster;
    auto engine =
        runtime::Engine::Create(eo, std::move(devices), nullptr, metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = std::shared_ptr<runtime::Engine>(*std::move(engine));
    v1::ModelInfo model;
    model.set_role("segmentation");
    model.set_name("fake");
    model.set_random_weights(true);
    server_->SetEngine(engine_, {model});
  }

  void TearDown() override {
    if (control_ != nullptr) control_->SetGate(true);
    server_.reset();
  }

  grpc::health::v1::HealthCheckResponse::ServingStatus Health(
      const std::string& service = "") {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    grpc::Status s = health_->Check(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.status();
  }

  static v1::DiarizationConfig RawConfig(const std::string& id = "") {
    v1::DiarizationConfig c;
    c.mutable_audio()->set_encoding(v1::LINEAR16);
    c.mutable_audio()->set_sample_rate_hz(kRate);
    c.set_request_id(id);
    return c;
  }

  grpc::Status Unary(const v1::DiarizationConfig& config,
                     const std::string& audio, v1::DiarizeResult* result,
                     grpc::ClientContext* context = nullptr) {
    return testing::DiarizeFile(*stub_, config, audio, result, context);
  }

  StreamOutcome Stream(const v1::DiarizeRequest& first,
                       const std::string& audio, size_t chunk_bytes = 3200,
                       grpc::ClientContext* context = nullptr) {
    return testing::DiarizeStream(*stub_, first, audio, chunk_bytes, context);
  }

  // Waits until the server has no open calls (slots are released when a
  // call's reactor is deleted, just after the client sees the status).
  void ExpectNoOpenCalls() {
    // The engine's job count drops once the job's completion has run, which
    // may be just after the client saw the status: wait for both.
    const absl::Time end = absl::Now() + absl::Seconds(10);
    while ((server_->state().open_calls() > 0 ||
            (engine_ && engine_->active_jobs() > 0)) &&
           absl::Now() < end) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    EXPECT_EQ(server_->state().open_calls(), 0);
    EXPECT_EQ(engine_ ? engine_->active_jobs() : 0, 0);
  }

  std::shared_ptr<FakeControl> control_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<runtime::Metrics> metrics_;
  std::shared_ptr<runtime::Engine> engine_;
  std::unique_ptr<GrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Diarization::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
  double max_backlog_audio_s_ = 3600;
  // Set before Start: serve with these tokens (auth/token_file.h).
  std::string token_file_json_;
};

TEST_F(ServerTest, LoadingThenServing) {
  Start({}, 3600, /*with_engine=*/false);
  EXPECT_EQ(Health(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Health("diarization.v1.Diarization"),
            grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  {
    grpc::ClientContext context;
    v1::ServerInfo info;
    ASSERT_TRUE(stub_->GetInfo(&context, {}, &info).ok());
    EXPECT_EQ(info.state(), "loading");
  }
  v1::DiarizeResult result;
  grpc::Status s = Unary(RawConfig(), Pcm16(11, 1), &result);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("loading"));

  StartEngine();
  EXPECT_EQ(Health(), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("diarization.v1.Diarization"),
            grpc::health::v1::HealthCheckResponse::SERVING);
  grpc::ClientContext context;
  v1::ServerInfo info;
  ASSERT_TRUE(stub_->GetInfo(&context, {}, &info).ok());
  EXPECT_EQ(info.state(), "serving");
  EXPECT_EQ(info.version(), "test");
  ASSERT_EQ(info.models_size(), 1);
  EXPECT_TRUE(info.models(0).random_weights());
  ASSERT_EQ(info.devices_size(), 1);
  EXPECT_EQ(info.devices(0).name(), "fake");
  EXPECT_EQ(info.limits().max_concurrent_streams(),
            ServiceLimits{}.max_concurrent_streams);
  EXPECT_EQ(info.limits().max_backlog_audio_s(), 3600);
}

TEST_F(ServerTest, UnaryAndStreamGiveTheSameResult) {
  Start();
  v1::DiarizeResult unary;
  grpc::Status s = Unary(RawConfig("u-1"), Pcm16(23, 2), &unary);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ExpectWindows(unary, 23, 2);
  EXPECT_EQ(unary.request_id(), "u-1");
  EXPECT_EQ(unary.device(), "fake");

  v1::DiarizationConfig c = RawConfig("s-1");
  StreamOutcome streamed = Stream(ConfigRequest(c), Pcm16(23, 2), 1234);
  ASSERT_TRUE(streamed.status.ok()) << streamed.status.error_message();
  ASSERT_TRUE(streamed.final_result.has_value());
  ExpectWindows(*streamed.final_result, 23, 2);
  EXPECT_EQ(streamed.final_result->request_id(), "s-1");
  EXPECT_TRUE(streamed.partials.empty());  // not asked for
  // Same segments and RTTM (apart from nothing: same uri default).
  EXPECT_EQ(streamed.final_result->rttm(), unary.rttm());
  EXPECT_THAT(unary.rttm(), HasSubstr("SPEAKER audio 1 0.000 10.000 <NA> <NA> "
                                      "SPEAKER_01 <NA> <NA>"));
  ExpectNoOpenCalls();
}

TEST_F(ServerTest, EncodedWavFileIsDecodedByTheServer) {
  Start();
  const std::string pcm = Pcm16(12, 3);
  // A minimal 16-bit mono WAV header (RIFF), written here independently.
  auto le32 = [](uint32_t v) {
    return std::string{static_cast<char>(v & 0xff),
                       static_cast<char>((v >> 8) & 0xff),
                       static_cast<char>((v >> 16) & 0xff),
                       static_cast<char>((v >> 24) & 0xff)};
  };
  auto le16 = [](uint16_t v) {
    return std::string{static_cast<char>(v & 0xff),
                       static_cast<char>((v >> 8) & 0xff)};
  };
  std::string wav = "RIFF" + le32(36 + pcm.size()) + "WAVEfmt " + le32(16) +
                    le16(1) + le16(1) + le32(kRate) + le32(kRate * 2) +
                    le16(2) + le16(16) + "data" + le32(pcm.size()) + pcm;
  v1::DiarizationConfig c;
  c.set_uri("my_file");
  c.mutable_options()->set_return_centroids(true);
  v1::DiarizeResult result;
  grpc::Status s = Unary(c, wav, &result);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ExpectWindows(result, 12, 3);
  EXPECT_THAT(result.rttm(), HasSubstr("SPEAKER my_file 1 "));
  EXPECT_EQ(result.request_id().rfind("srv-", 0), 0u);
  ASSERT_EQ(result.centroids_size(), 3);
  EXPECT_EQ(result.centroids(2).speaker(), "SPEAKER_02");
  EXPECT_EQ(result.centroids(2).embedding_size(), 256);
  EXPECT_EQ(result.centroids(2).embedding(0), 2.0f);

  // Garbage instead of a file: INVALID_ARGUMENT from the decoder.
  v1::DiarizeResult bad;
  s = Unary(v1::DiarizationConfig(), "this is not audio at all", &bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ExpectNoOpenCalls();
}

TEST_F(ServerTest, PartialResultsArriveProvisionalBeforeTheFinal) {
  Start();
  v1::DiarizationConfig c = RawConfig("p-1");
  c.mutable_options()->set_partial_results(true);
  c.mutable_options()->set_partial_interval_s(2);
  // Slow the networks so that audio arrives faster than it is processed
  // and provisional clusterings happen while the stream flows.
  control_->SetDelay(absl::Milliseconds(5));
  StreamOutcome out = Stream(ConfigRequest(c), Pcm16(40, 1), 16000);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  ASSERT_TRUE(out.final_result.has_value());
  ExpectWindows(*out.final_result, 40, 1);
  ASSERT_FALSE(out.partials.empty());
  double last_processed = 0;
  for (const v1::PartialResult& p : out.partials) {
    EXPECT_TRUE(p.provisional());
    EXPECT_EQ(p.request_id(), "p-1");
    EXPECT_LE(p.audio_processed_s(), p.audio_received_s() + 1e-9);
    EXPECT_GE(p.audio_processed_s(), last_processed);
    last_processed = p.audio_processed_s();
    for (const v1::Segment& seg : p.segments()) {
      EXPECT_EQ(seg.speaker(), "SPEAKER_00");
    }
  }
}

TEST_F(ServerTest, MalformedStreamsAreInvalidArgument) {
  Start();
  // Audio first.
  {
    v1::DiarizeRequest audio_first;
    audio_first.set_audio(Pcm16(1, 1));
    StreamOutcome out = Stream(audio_first, "");
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(out.status.error_message(), HasSubstr("must carry config"));
  }
  // A bad sample rate.
  {
    v1::DiarizationConfig c = RawConfig();
    c.mutable_audio()->set_sample_rate_hz(1000);
    StreamOutcome out = Stream(ConfigRequest(c), Pcm16(1, 1));
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(out.status.error_message(), HasSubstr("sample_rate_hz"));
  }
  // Contradictory hints.
  {
    v1::DiarizationConfig c = RawConfig();
    c.mutable_speakers()->set_min_speakers(3);
    c.mutable_speakers()->set_max_speakers(2);
    StreamOutcome out = Stream(ConfigRequest(c), Pcm16(11, 1));
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(out.status.error_message(), HasSubstr("min_speakers"));
  }
  // Config twice.
  {
    grpc::ClientContext context;
    auto stream = stub_->Diarize(&context);
    ASSERT_TRUE(stream->Write(ConfigRequest(RawConfig())));
    stream->Write(ConfigRequest(RawConfig()));
    stream->WritesDone();
    v1::DiarizeResponse r;
    while (stream->Read(&r)) {
    }
    grpc::Status s = stream->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("twice"));
  }
  // A partial frame at the end (odd byte count of 16-bit PCM).
  {
    StreamOutcome out =
        Stream(ConfigRequest(RawConfig()), Pcm16(11, 1) + "x", 1001);
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  // No audio at all.
  {
    StreamOutcome out = Stream(ConfigRequest(RawConfig()), "");
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  // ENCODED on the stream.
  {
    v1::DiarizationConfig c = RawConfig();
    c.mutable_audio()->set_encoding(v1::ENCODED);
    StreamOutcome out = Stream(ConfigRequest(c), Pcm16(1, 1));
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(out.status.error_message(), HasSubstr("DiarizeFile only"));
  }
  // NaN samples in FLOAT32.
  {
    v1::DiarizationConfig c = RawConfig();
    c.mutable_audio()->set_encoding(v1::FLOAT32);
    std::vector<float> samples(16000, 0.1f);
    samples[777] = std::nanf("");
    StreamOutcome out =
        Stream(ConfigRequest(c),
               std::string(reinterpret_cast<const char*>(samples.data()),
                           samples.size() * 4));
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  ExpectNoOpenCalls();
}

TEST_F(ServerTest, CancellationCancelsTheJob) {
  Start();
  control_->SetGate(false);  // the networks block: the job cannot finish
  grpc::ClientContext context;
  auto stream = stub_->Diarize(&context);
  ASSERT_TRUE(stream->Write(ConfigRequest(RawConfig("c-1"))));
  v1::DiarizeRequest chunk;
  chunk.set_audio(Pcm16(12, 1));
  ASSERT_TRUE(stream->Write(chunk));
  control_->WaitEntered(1);  // a window reached the network
  EXPECT_EQ(engine_->active_jobs(), 1);
  context.TryCancel();
  grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::CANCELLED);
  // The job was cancelled while the network was still blocked.
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (engine_->active_jobs() > 0 && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(engine_->active_jobs(), 0);
  control_->SetGate(true);
  ExpectNoOpenCalls();
}

TEST_F(ServerTest, ClientDeadlineIsDeadlineExceeded) {
  Start();
  control_->SetGate(false);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(500));
  v1::DiarizeResult result;
  grpc::Status s = Unary(RawConfig(), Pcm16(11, 1), &result, &context);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  control_->SetGate(true);
  ExpectNoOpenCalls();
}

TEST_F(ServerTest, StreamLongerThanMaxStreamDurationIsCut) {
  ServiceLimits limits;
  limits.max_stream_duration_s = 1.0;
  Start(limits);
  grpc::ClientContext context;
  auto stream = stub_->Diarize(&context);
  ASSERT_TRUE(stream->Write(ConfigRequest(RawConfig())));
  // Send nothing more; the server ends the stream after 1 s.
  v1::DiarizeResponse r;
  const absl::Time start = absl::Now();
  while (stream->Read(&r)) {
  }
  grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(s.error_message(), HasSubstr("max_stream_duration_s"));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(900));
  ExpectNoOpenCalls();
}

TEST_F(ServerTest, TooManyConcurrentCallsIsResourceExhausted) {
  ServiceLimits limits;
  limits.max_concurrent_streams = 2;
  Start(limits);
  grpc::ClientContext c1, c2;
  auto s1 = stub_->Diarize(&c1);
  auto s2 = stub_->Diarize(&c2);
  ASSERT_TRUE(s1->Write(ConfigRequest(RawConfig())));
  ASSERT_TRUE(s2->Write(ConfigRequest(RawConfig())));
  // Both are admitted once the server saw them.
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (server_->state().open_calls() < 2 && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  v1::DiarizeResult result;
  grpc::Status s = Unary(RawConfig(), Pcm16(11, 1), &result);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("max_concurrent_streams is 2"));
  c1.TryCancel();
  c2.TryCancel();
  s1->Finish();
  s2->Finish();
  ExpectNoOpenCalls();
  // Room again.
  s = Unary(RawConfig(), Pcm16(11, 1), &result);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

// A client that opens its next call as soon as it has the previous one's
// status must be admitted: the slot is given back when the status is sent,
// not when gRPC later destroys the reactor. The soak (64 streams, each
// restarting at once) saw 3 % of such calls refused before.
TEST_F(ServerTest, ANextCallRightAfterTheStatusIsAdmitted) {
  ServiceLimits limits;
  limits.max_concurrent_streams = 1;
  Start(limits);
  const std::string audio = Pcm16(2, 1);
  int refused = 0;
  constexpr int kCalls = 60;
  for (int i = 0; i < kCalls; ++i) {
    if (i % 2 == 0) {
      v1::DiarizeResult result;
      grpc::Status s = Unary(RawConfig(), audio, &result);
      if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED)
        ++refused;
      else
        EXPECT_TRUE(s.ok()) << s.error_message();
    } else {
      StreamOutcome o = Stream(ConfigRequest(RawConfig()), audio);
      if (o.status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        ++refused;
      } else {
        EXPECT_TRUE(o.status.ok()) << o.status.error_message();
      }
    }
  }
  EXPECT_EQ(refused, 0) << "of " << kCalls << " back-to-back calls";
  ExpectNoOpenCalls();
}

TEST_F(ServerTest, FullBacklogIsResourceExhaustedWithRetryHint) {
  Start({}, /*max_backlog_audio_s=*/30);
  control_->SetGate(false);  // nothing gets processed
  // 25 s fit in the backlog and stay there.
  grpc::ClientContext first_context;
  auto first = stub_->Diarize(&first_context);
  ASSERT_TRUE(first->Write(ConfigRequest(RawConfig())));
  v1::DiarizeRequest chunk;
  chunk.set_audio(Pcm16(25, 1));
  ASSERT_TRUE(first->Write(chunk));
  control_->WaitEntered(1);
  // 20 more do not.
  grpc::ClientContext context;
  v1::DiarizeResult result;
  grpc::Status s = Unary(RawConfig(), Pcm16(20, 1), &result, &context);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("backlog"));
  auto hint = context.GetServerTrailingMetadata().find("retry-after-s");
  ASSERT_NE(hint, context.GetServerTrailingMetadata().end());
  EXPECT_GE(std::stod(std::string(hint->second.data(), hint->second.size())),
            1.0);
  // A recording longer than the whole backlog can never fit: not retryable.
  s = Unary(RawConfig(), Pcm16(31, 1), &result);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("stream it instead"));

  first_context.TryCancel();
  first->Finish();
  control_->SetGate(true);
  ExpectNoOpenCalls();
}

// A token's max_backlog_share holds all its calls together, from any
// connection; another token is not held by it. Backlog 40 s: "batch" may
// hold 10 s. With the networks stopped, its 8 s stream stays in the
// backlog, and its 4 s upload is refused at once (without the per-token
// limit it would be admitted and wait for the networks until its deadline),
// while the same upload with the other token is admitted (it waits until its
// deadline, since nothing is processed).
TEST_F(ServerTest, TokenBacklogShareHoldsAllItsCalls) {
  const std::string batch = "batch-token-0123456789abcdef";
  const std::string other = "other-token-0123456789abcdef";
  token_file_json_ =
      absl::StrFormat(R"({"tokens": [)"
                      R"({"name": "batch", "token": "%s", "methods": ["*"],)"
                      R"( "limits": {"max_backlog_share": 0.25}},)"
                      R"({"name": "other", "token": "%s", "methods": ["*"]}]})",
                      batch, other);
  Start({}, /*max_backlog_audio_s=*/40);
  control_->SetGate(false);  // nothing gets processed
  grpc::ClientContext stream_context;
  stream_context.AddMetadata("authorization", "Bearer " + batch);
  auto stream = stub_->Diarize(&stream_context);
  ASSERT_TRUE(stream->Write(ConfigRequest(RawConfig())));
  v1::DiarizeRequest chunk;
  chunk.set_audio(Pcm16(8, 1));
  ASSERT_TRUE(stream->Write(chunk));
  // Less than a window: it stays in the backlog until the half-close.
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (engine_->backlog_audio_s() < 8.0 - 1e-6 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_NEAR(engine_->backlog_audio_s(), 8.0, 1e-6);

  // Its own connection, so the limit is the token's, not the peer's.
  auto channel =
      grpc::CreateChannel(absl::StrFormat("127.0.0.1:%d", server_->port()),
                          grpc::InsecureChannelCredentials());
  auto stub = v1::Diarization::NewStub(channel);
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + batch);
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    v1::DiarizeResult result;
    grpc::Status s = testing::DiarizeFile(*stub, RawConfig(), Pcm16(4, 1),
                                          &result, &context);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("max_backlog_share"));
    EXPECT_THAT(s.error_message(), HasSubstr("\"batch\""));
    EXPECT_NE(context.GetServerTrailingMetadata().find("retry-after-s"),
              context.GetServerTrailingMetadata().end());
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + other);
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    v1::DiarizeResult result;
    grpc::Status s = testing::DiarizeFile(*stub, RawConfig(), Pcm16(4, 1),
                                          &result, &context);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
        << s.error_message();
  }
  // Processed, the stream completes and gives the token's room back.
  control_->SetGate(true);
  ASSERT_TRUE(stream->WritesDone());
  v1::DiarizeResponse response;
  while (stream->Read(&response)) {
  }
  EXPECT_TRUE(stream->Finish().ok());
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + batch);
    v1::DiarizeResult result;
    grpc::Status s = testing::DiarizeFile(*stub, RawConfig(), Pcm16(10, 1),
                                          &result, &context);
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  ExpectNoOpenCalls();
}

TEST_F(ServerTest, SixteenConcurrentStreamsKeepTheirOwnResults) {
  Start();
  constexpr int kStreams = 16;
  std::vector<StreamOutcome> outcomes(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      v1::DiarizationConfig c = RawConfig(absl::StrFormat("stream-%02d", i));
      outcomes[i] = Stream(ConfigRequest(c), Pcm16(11 + i, 1 + i % 3),
                           1600 * (1 + i % 5));
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(outcomes[i].status.ok()) << outcomes[i].status.error_message();
    ASSERT_TRUE(outcomes[i].final_result.has_value());
    EXPECT_EQ(outcomes[i].final_result->request_id(),
              absl::StrFormat("stream-%02d", i));
    ExpectWindows(*outcomes[i].final_result, 11 + i, 1 + i % 3);
  }
  ExpectNoOpenCalls();
}

TEST_F(ServerTest, DrainUnderLoadFinishesOpenCallsAndRefusesNewOnes) {
  Start();
  control_->SetGate(false);
  constexpr int kStreams = 3;
  std::vector<StreamOutcome> outcomes(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      outcomes[i] = Stream(ConfigRequest(RawConfig()), Pcm16(12, 2));
    });
  }
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (engine_->active_jobs() < kStreams && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(engine_->active_jobs(), kStreams);

  absl::Status drained;
  absl::Notification drain_done;
  std::thread drainer([&] {
    drained = server_->Drain(absl::Now() + absl::Seconds(20));
    drain_done.Notify();
  });
  while (server_->state().state() != ServingState::kDraining) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(Health(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  v1::DiarizeResult result;
  grpc::Status s = Unary(RawConfig(), Pcm16(11, 1), &result);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("draining"));
  EXPECT_FALSE(drain_done.HasBeenNotified());  // still waiting for the calls

  control_->SetGate(true);  // the open calls can now finish
  for (std::thread& t : threads) t.join();
  drainer.join();
  EXPECT_TRUE(drained.ok()) << drained;
  for (const StreamOutcome& o : outcomes) {
    ASSERT_TRUE(o.status.ok()) << o.status.error_message();
    ExpectWindows(*o.final_result, 12, 2);
  }
}

TEST_F(ServerTest, DrainDeadlineCutsOpenCallsWithUnavailable) {
  Start();
  control_->SetGate(false);
  StreamOutcome outcome;
  std::thread t(
      [&] { outcome = Stream(ConfigRequest(RawConfig()), Pcm16(12, 2)); });
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (engine_->active_jobs() < 1 && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  absl::Status drained;
  std::thread drainer(
      [&] { drained = server_->Drain(absl::Now() + absl::Milliseconds(300)); });
  // The call is cut short while its window is still inside the (blocked)
  // network...
  t.join();
  EXPECT_EQ(outcome.status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << outcome.status.error_message();
  // ... and the engine's workers stop once the running batch returns.
  control_->SetGate(true);
  drainer.join();
  EXPECT_EQ(drained.code(), absl::StatusCode::kDeadlineExceeded) << drained;
}

TEST_F(ServerTest, RequestsAreCountedByMethodAndCode) {
  Start();
  v1::DiarizeResult result;
  ASSERT_TRUE(Unary(RawConfig(), Pcm16(11, 1), &result).ok());
  v1::DiarizationConfig bad = RawConfig();
  bad.mutable_audio()->set_sample_rate_hz(5);
  EXPECT_FALSE(Unary(bad, Pcm16(11, 1), &result).ok());
  ExpectNoOpenCalls();
  auto count = [&](const std::string& code) {
    return MetricValue(*registry_, "diarization_requests_total",
                       {{"method", "DiarizeFile"}, {"code", code}});
  };
  EXPECT_EQ(count("OK"), 1);
  EXPECT_EQ(count("INVALID_ARGUMENT"), 1);
}

// Issue 13: a stream that never sends its config ends after
// config_timeout_s (it held a call slot forever before).
TEST_F(ServerTest, StreamWithoutConfigTimesOut) {
  ServiceLimits limits;
  limits.config_timeout_s = 0.5;
  Start(limits);
  grpc::ClientContext context;
  auto stream = stub_->Diarize(&context);
  const absl::Time start = absl::Now();
  v1::DiarizeResponse r;
  while (stream->Read(&r)) {
  }
  grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(s.error_message(), HasSubstr("config_timeout_s"));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(450));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  ExpectNoOpenCalls();
}

// Issue 13: flow control instead of loss. With the networks blocked, a
// client sending as fast as it can is held by the server once the job's
// backlog passes the high-water mark: the backlog (all of the job's audio,
// nothing is processed) stays near the mark instead of growing to the
// engine's limit, which failed the stream with RESOURCE_EXHAUSTED before.
// When the networks run again the stream completes with all of its audio.
TEST_F(ServerTest, FastStreamIsHeldAtTheHighWaterMarkThenCompletes) {
  ServiceLimits limits;
  limits.stream_backlog_high_water_s = 20;
  Start(limits, /*max_backlog_audio_s=*/40);
  control_->SetGate(false);
  grpc::ClientContext context;
  auto stream = stub_->Diarize(&context);
  ASSERT_TRUE(stream->Write(ConfigRequest(RawConfig("fast"))));
  constexpr int kSeconds = 120;  // 3x the whole backlog
  const std::string audio = Pcm16(kSeconds, 2);
  std::thread writer([&] {
    for (int i = 0; i < kSeconds; ++i) {
      v1::DiarizeRequest chunk;
      chunk.set_audio(audio.substr(i * 2 * kRate, 2 * kRate));
      if (!stream->Write(chunk)) return;
    }
    stream->WritesDone();
  });
  absl::SleepFor(absl::Seconds(2));
  const double held_backlog = engine_->backlog_audio_s();
  EXPECT_GE(held_backlog, 20.0);
  EXPECT_LE(held_backlog, 20.0 + 1.0 + 1e-9) << "the server kept reading";
  control_->SetGate(true);
  v1::DiarizeResponse response;
  std::optional<v1::DiarizeResult> final_result;
  while (stream->Read(&response)) {
    if (response.has_final()) final_result = response.final();
  }
  writer.join();
  grpc::Status s = stream->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(final_result.has_value());
  ExpectWindows(*final_result, kSeconds, 2);
  std::fprintf(stderr, "held at %.1f s of backlog\n", held_backlog);
  ExpectNoOpenCalls();
}

// Streams whose deadline passes while their audio is still arriving: the
// client sees DEADLINE_EXCEEDED, and the server must record the same. A
// chunk appended just after the job was cancelled used to turn the job's own
// "cancelled" answer into the call's status (CANCELLED, "job cancelled by the
// caller"), which the deadline storm in tests/attack_test.cc caught now and
// then.
TEST_F(ServerTest, StreamsCutByTheirDeadlineMidAudioAreDeadlineExceeded) {
  Start();
  constexpr int kThreads = 8, kStreamsEach = 8;
  const std::string audio = Pcm16(600, 1);  // more than any deadline allows
  std::atomic<int> client_not_deadline{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(::testing::UnitTest::GetInstance()->random_seed() + t);
      for (int i = 0; i < kStreamsEach; ++i) {
        grpc::ClientContext context;
        context.set_deadline(
            std::chrono::system_clock::now() +
            std::chrono::milliseconds(
                std::uniform_int_distribution<int>(1, 150)(rng)));
        // 1 s chunks, written as fast as the stream takes them, so that
        // appends are in flight when the deadline cancels the job (before
        // the fix, 3 of 20 runs logged a CANCELLED).
        StreamOutcome out =
            Stream(ConfigRequest(RawConfig("cut")), audio, 32000, &context);
        if (out.status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
          ++client_not_deadline;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(client_not_deadline.load(), 0);
  ExpectNoOpenCalls();
  const double all = MetricValue(*registry_, "diarization_requests_total",
                                 {{"method", "Diarize"}});
  const double deadline =
      MetricValue(*registry_, "diarization_requests_total",
                  {{"method", "Diarize"}, {"code", "DEADLINE_EXCEEDED"}});
  // Calls that gRPC refused before a handler ran are not counted.
  EXPECT_GT(deadline, 0);
  EXPECT_EQ(all, deadline) << "CANCELLED: "
                           << MetricValue(*registry_,
                                          "diarization_requests_total",
                                          {{"method", "Diarize"},
                                           {"code", "CANCELLED"}});
}

}  // namespace
}  // namespace diarization::server
