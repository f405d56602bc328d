// Issue 13's attacks against the real diarization_server binary (CPU
// backend, random weights, 127.0.0.1 only): each numbered failure of the
// issue as a test that failed on the code before the fix. Every test starts
// its own server with the flags it needs, bounds its calls with deadlines
// and kills only the server it started. While an attack runs, a victim
// stream paced like a live source must get its final result within 1 s of
// its end (the "done when"): on this shared CPU within 1.5 × its
// latency alone + 1 s (see ExpectVictimServed).
//
// The same cases run against the CUDA build on a GPU machine
// (bench/gpu/parts/attack.sh): ATTACK_DEVICE=cuda:0 starts the server
// with that device, DIARIZATION_SERVER_UNDER_TEST names the CUDA binary, and
// ATTACK_VICTIM_BOUND_S=1 makes the bound the issue's flat "within 1 s of
// the stream's end".
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "diarization/v1/diarization.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/test_client_calls.h"
#include "testing/silent_flac.h"
#include "tests/attack_clients.h"
#include "tests/server_process.h"

namespace diarization::testing {
namespace {

using server::testing::ConfigRequest;
using ::testing::HasSubstr;

class Attack : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> flags) {
    auto models = RandomModelDir();
    ASSERT_TRUE(models.ok()) << models.status();
    flags.push_back("--threads=1");
    if (Device() != "cpu") flags.push_back("--device=" + Device());
    // Lets a build from before these flags start (to see the tests fail on
    // it, with DIARIZATION_SERVER_UNDER_TEST); a current build ignores it.
    flags.push_back(
        "--undefok=config_timeout_s,stream_backlog_high_water_s,"
        "max_streams_per_connection,decode_threads,max_decode_cpu_s");
    auto server = ServerProcess::Start(*models, flags);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  // The victim's latency with nothing else running (see
  // ExpectVictimServed).
  double Baseline() {
    VictimOutcome alone = PacedStream(*server_, 6, "baseline");
    EXPECT_TRUE(alone.status.ok()) << alone.status.error_message();
    return alone.final_after_end_s;
  }
  std::unique_ptr<ServerProcess> server_;
};

// Failure 1: a 1.4 MB FLAC that decodes to 14000 s (192 kHz × 8 ch) with a
// 5 s deadline, twice, plus the same without a length in its header. Before:
// decoded for 130 s after the clients left, +3 GB RSS, a concurrent
// stream's result 101 s late. After: the announced one is refused before
// decoding; the unannounced one stops at its bound or deadline; the victim
// is on time.
TEST_F(Attack, DecoderBombWithAConcurrentPacedStream) {
  StartServer({});
  const double baseline_s = Baseline();
  const int64_t rss_before = server_->RssBytes();
  const std::string bomb = SilentFlac({});
  const std::string quiet_bomb = SilentFlac({.announce_length = false});
  ASSERT_LT(bomb.size(), 1500000u);
  std::vector<grpc::Status> statuses(3);
  std::vector<double> seconds(3);
  std::thread victim_thread;
  VictimOutcome victim;
  victim_thread = std::thread([&] { victim = PacedStream(*server_, 12, "v"); });
  absl::SleepFor(absl::Seconds(1));
  std::vector<std::thread> attackers;
  for (int i = 0; i < 3; ++i) {
    attackers.emplace_back([&, i] {
      auto stub = v1::Diarization::NewStub(OwnConnection(*server_, i));
      grpc::ClientContext context;
      context.set_deadline(In(5));
      v1::DiarizationConfig config;
      config.mutable_audio()->set_encoding(v1::ENCODED);
      v1::DiarizeResult result;
      const absl::Time start = absl::Now();
      statuses[i] = server::testing::DiarizeFile(
          *stub, config, i < 2 ? bomb : quiet_bomb, &result, &context);
      seconds[i] = absl::ToDoubleSeconds(absl::Now() - start);
    });
  }
  for (std::thread& t : attackers) t.join();
  victim_thread.join();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(statuses[i].error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << statuses[i].error_message();
    EXPECT_THAT(statuses[i].error_message(), HasSubstr("14000"));
    EXPECT_LT(seconds[i], 2.0) << "refused only after decoding";
  }
  EXPECT_NE(statuses[2].error_code(), grpc::StatusCode::OK);
  for (int i = 0; i < 3; ++i) {
    std::fprintf(stderr, "bomb %d: %s after %.2f s: %s\n", i,
                 statuses[i].ok() ? "OK" : "error", seconds[i],
                 statuses[i].error_message().c_str());
  }
  for (const std::string& line : LogLines(*server_, "DiarizeFile")) {
    std::fprintf(stderr, "server: %s\n", line.c_str());
  }
  ExpectVictimServed(victim, 12, *server_, baseline_s);
  // The server stopped decoding when the clients left: nothing is still
  // running a moment later, and memory did not grow by gigabytes.
  EXPECT_TRUE(WaitFor(*server_, Idle, 3)) << server_->Log();
  const int64_t rss_after = server_->RssBytes();
  std::fprintf(stderr, "RSS before %.0f MB, after %.0f MB\n", rss_before / 1e6,
               rss_after / 1e6);
  EXPECT_LT(rss_after - rss_before, int64_t{400} << 20);
  ExpectOnlyJsonLines(*server_);
}

// MP3 bombs (issue 41): hours of tiny frames (refused from the frame count
// before any decoding), an ID3 flood without audio, a last frame cut by the
// end of the file. Each is INVALID_ARGUMENT within 2 s, quietly, while a
// paced stream is served.
TEST_F(Attack, Mp3BombsWithAConcurrentPacedStream) {
  StartServer({});
  const double baseline_s = Baseline();
  // One silent MPEG-2.5 Layer III frame: 8 kbit/s, 8 kHz, mono, 72 bytes,
  // 576 samples.
  std::string frame(72, '\0');
  frame[0] = '\xff';
  frame[1] = '\xe3';
  frame[2] = '\x18';
  frame[3] = '\xc0';
  std::string hours;  // 200,000 frames: 14400 s in 14.4 MB
  hours.reserve(frame.size() * 200000);
  for (int i = 0; i < 200000; ++i) hours += frame;
  std::string flood;  // 100,000 empty ID3v2.4 tags, no audio
  for (int i = 0; i < 100000; ++i) flood += std::string("ID3\x04\0\0\0\0\0\0", 10);
  const std::string cut = hours.substr(0, 72 * 1000 + 30);
  const std::string bombs[] = {hours, flood, cut};
  const char* const expected[] = {"14400", "no MPEG audio frame", "truncated"};
  std::vector<grpc::Status> statuses(3);
  std::vector<double> seconds(3);
  VictimOutcome victim;
  std::thread victim_thread([&] { victim = PacedStream(*server_, 8, "v"); });
  absl::SleepFor(absl::Seconds(1));
  std::vector<std::thread> attackers;
  for (int i = 0; i < 3; ++i) {
    attackers.emplace_back([&, i] {
      auto stub = v1::Diarization::NewStub(OwnConnection(*server_, i));
      grpc::ClientContext context;
      context.set_deadline(In(10));
      v1::DiarizationConfig config;
      config.mutable_audio()->set_encoding(v1::ENCODED);
      v1::DiarizeResult result;
      const absl::Time start = absl::Now();
      statuses[i] = server::testing::DiarizeFile(*stub, config, bombs[i],
                                                 &result, &context);
      seconds[i] = absl::ToDoubleSeconds(absl::Now() - start);
    });
  }
  for (std::thread& t : attackers) t.join();
  victim_thread.join();
  for (int i = 0; i < 3; ++i) {
    std::fprintf(stderr, "mp3 bomb %d: %.2f s: %s\n", i, seconds[i],
                 statuses[i].error_message().c_str());
    EXPECT_EQ(statuses[i].error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << statuses[i].error_message();
    EXPECT_THAT(statuses[i].error_message(), HasSubstr(expected[i]));
    EXPECT_LT(seconds[i], 2.0);
  }
  ExpectVictimServed(victim, 8, *server_, baseline_s);
  ExpectOnlyJsonLines(*server_);
}

// Failure 2: a long upload must not starve a short stream sent after it.
// Before: no embedding batch ran for anyone until every window of the long
// job was segmented; a 5 s stream 3 s after a long upload had no result
// after 140 s. Needs the engine's round-robin batching across jobs.
TEST_F(Attack, LongJobDoesNotStarveAPacedStream) {
  // Batches of one window: on one CPU thread a batch of 32 windows takes
  // seconds, and a window waits for the batch in progress whatever the
  // scheduling policy (on a GPU a batch is milliseconds: default batches).
  if (OnGpu()) {
    StartServer({});
  } else {
    StartServer({"--segmentation_batch_size=1", "--embedding_batch_size=1"});
  }
  const double baseline_s = Baseline();
  // A GPU works through a 600 s upload in seconds: there, 4 of them, each
  // uploaded again as soon as it is done, until the victim has its result.
  const int uploads = OnGpu() ? 4 : 1;
  const std::string long_audio = Pcm(600, 5);
  std::atomic<bool> victim_done{false};
  std::atomic<int> uploads_done{0};
  std::vector<std::thread> upload_threads;
  for (int u = 0; u < uploads; ++u) {
    upload_threads.emplace_back([&, u] {
      auto stub = v1::Diarization::NewStub(OwnConnection(*server_, 1 + u));
      do {
        grpc::ClientContext context;
        context.set_deadline(In(30));  // it need not finish; it must not block
        v1::DiarizeResult result;
        if (server::testing::DiarizeFile(*stub, RawConfig("long"), long_audio,
                                         &result, &context)
                .ok()) {
          ++uploads_done;
        }
      } while (OnGpu() && !victim_done);
    });
  }
  ASSERT_TRUE(WaitFor(
      *server_, [](const v1::ServerInfo& i) { return i.active_jobs() >= 1; },
      30));
  absl::SleepFor(absl::Seconds(OnGpu() ? 0.5 : 2.0));
  VictimOutcome victim = PacedStream(*server_, 8, "short");
  victim_done = true;
  // Fair share: with the long job running, the victim gets half of the one
  // CPU thread, so its last windows take up to twice as long as alone.
  ExpectVictimServed(victim, 8, *server_, baseline_s, /*share=*/2.0);
  for (std::thread& t : upload_threads) t.join();
  std::fprintf(stderr, "long uploads completed: %d\n", uploads_done.load());
}

// Failure 4: streams that never send their config, 64 of them on one
// connection. Before: they held every call slot forever (the service was
// off for everyone) and a drain waited its full timeout for them. After: a
// connection may open only max_streams_per_connection at once, an idle
// stream ends after config_timeout_s, and a drain cuts idle streams at once.
TEST_F(Attack, SixtyFourIdleStreamsOnOneConnection) {
  StartServer({"--config_timeout_s=4", "--drain_timeout_s=120"});
  const double baseline_s = Baseline();
  auto idle_channel = OwnConnection(*server_, 1);
  auto idle_stub = v1::Diarization::NewStub(idle_channel);
  constexpr int kIdle = 64;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<
      grpc::ClientReaderWriter<v1::DiarizeRequest, v1::DiarizeResponse>>>
      idle;
  for (int i = 0; i < kIdle; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->set_deadline(In(60));
    idle.push_back(idle_stub->Diarize(contexts.back().get()));
  }
  // The service still answers others: a victim on its own connection.
  VictimOutcome victim = PacedStream(*server_, 6, "victim");
  ExpectVictimServed(victim, 6, *server_, baseline_s);
  // Idle streams end with DEADLINE_EXCEEDED "no config" (those the
  // connection limit held back in the client start, and time out, later).
  std::atomic<int> timed_out{0};
  std::vector<std::thread> finishers;
  const absl::Time start = absl::Now();
  for (int i = 0; i < 16; ++i) {
    finishers.emplace_back([&, i] {
      grpc::Status s = idle[i]->Finish();
      if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
          absl::StrContains(s.error_message(), "config_timeout_s")) {
        ++timed_out;
      }
    });
  }
  for (std::thread& t : finishers) t.join();
  EXPECT_EQ(timed_out.load(), 16);
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  // The other 48 are now admitted and idle. A drain does not wait for them.
  const absl::Time drain_start = absl::Now();
  server_->Signal(SIGTERM);
  EXPECT_EQ(server_->Wait(), 0) << server_->Log();
  const double drain_s = absl::ToDoubleSeconds(absl::Now() - drain_start);
  std::fprintf(stderr, "drain with idle streams open: %.2f s\n", drain_s);
  EXPECT_LT(drain_s, 10.0) << "the drain waited for idle streams";
  for (int i = 16; i < kIdle; ++i) contexts[i]->TryCancel();
  for (int i = 16; i < kIdle; ++i) idle[i]->Finish();
}

// Failure 5: a long recording sent as fast as the client can. Before: ended
// after 1.4 s with RESOURCE_EXHAUSTED, all accepted audio thrown away.
// After: the server stops reading while the job's backlog is above the
// high-water mark (gRPC flow control slows the client) and the stream
// completes. The case is 2 h against a 3600 s backlog; on this CPU
// that would run for about half an hour, so the same shape is scaled down:
// 150 s of FAST-mode audio against a 40 s backlog and the lowest high-water
// mark, 20 s (the recording is 3.75× the whole backlog).
TEST_F(Attack, FastLongStreamIsSlowedNotKilled) {
  StartServer({"--max_backlog_audio_s=40", "--stream_backlog_high_water_s=20"});
  auto stub = v1::Diarization::NewStub(OwnConnection(*server_, 1));
  grpc::ClientContext context;
  context.set_deadline(In(300));
  auto stream = stub->Diarize(&context);
  v1::DiarizationConfig config = RawConfig("fast");
  config.mutable_options()->set_quality(v1::FAST);
  constexpr double kSeconds = 150;
  const std::string audio = Pcm(kSeconds, 9);
  std::atomic<double> max_backlog{0};
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done) {
      const double b = Info(*server_).backlog_audio_s();
      if (b > max_backlog) max_backlog = b;
      absl::SleepFor(absl::Milliseconds(100));
    }
  });
  std::thread writer([&] {
    if (!stream->Write(ConfigRequest(config))) return;
    constexpr size_t kChunk = kRate * 2;  // 1 s per message
    for (size_t i = 0; i < audio.size(); i += kChunk) {
      v1::DiarizeRequest r;
      r.set_audio(audio.substr(i, kChunk));
      if (!stream->Write(r)) return;
    }
    stream->WritesDone();
  });
  std::optional<v1::DiarizeResult> final_result;
  v1::DiarizeResponse response;
  while (stream->Read(&response)) {
    if (response.has_final()) final_result = response.final();
  }
  writer.join();
  grpc::Status s = stream->Finish();
  done = true;
  watcher.join();
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << server_->Log();
  ASSERT_TRUE(final_result.has_value());
  EXPECT_NEAR(final_result->audio_s(), kSeconds, 1e-3);
  std::fprintf(stderr, "fast stream: backlog peaked at %.1f s\n",
               max_backlog.load());
  // The high-water mark plus what gRPC's buffers and one message hold.
  EXPECT_LT(max_backlog.load(), 40.0);
}

// A storm of calls with tiny deadlines (1 ms to 300 ms), unary and streams,
// from many threads. Before: some were logged INVALID_ARGUMENT or CANCELLED
// although the client saw DEADLINE_EXCEEDED. After: every one is logged
// DEADLINE_EXCEEDED (or, for an upload, RESOURCE_EXHAUSTED when the decode
// queue is full), nothing is left running, a victim stream is on time.
TEST_F(Attack, DeadlineStorm) {
  StartServer({});
  const double baseline_s = Baseline();
  std::thread victim_thread;
  VictimOutcome victim;
  victim_thread =
      std::thread([&] { victim = PacedStream(*server_, 10, "victim"); });
  const std::string audio = Pcm(20, 3);
  constexpr int kThreads = 6, kCallsEach = 20;
  std::atomic<int> not_deadline{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto stub = v1::Diarization::NewStub(OwnConnection(*server_, 10 + t));
      std::mt19937 rng(Seed() + t);
      for (int i = 0; i < kCallsEach; ++i) {
        const double deadline_s =
            i % 3 == 0
                ? 0.001
                : std::uniform_real_distribution<double>(0.001, 0.3)(rng);
        grpc::ClientContext context;
        context.set_deadline(In(deadline_s));
        grpc::Status s;
        if (i % 2 == 0) {
          v1::DiarizeResult r;
          s = server::testing::DiarizeFile(*stub, RawConfig("storm"), audio, &r,
                                           &context);
        } else {
          s = server::testing::DiarizeStream(*stub,
                                             ConfigRequest(RawConfig("storm")),
                                             audio, 32000, &context)
                  .status;
        }
        // Uploads may also find the decode queue full (RESOURCE_EXHAUSTED,
        // an admission answer), and on a GPU a call can be answered before
        // its deadline (OK); nothing else is right.
        if (s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED &&
            s.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED &&
            !s.ok()) {
          ++not_deadline;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  victim_thread.join();
  EXPECT_EQ(not_deadline.load(), 0);
  ExpectVictimServed(victim, 10, *server_, baseline_s);
  ASSERT_TRUE(WaitFor(*server_, Idle, 20)) << server_->Log();
  int storm_lines = 0;
  for (const char* method : {"Diarize", "DiarizeFile"}) {
    for (const std::string& line : LogLines(*server_, method)) {
      if (!absl::StrContains(line, "\"request_id\":\"storm\"")) continue;
      ++storm_lines;
      // What the client saw: its deadline, or (uploads) a full decode queue,
      // or its result when the device answered in time (a GPU does 20 s of
      // audio in well under 300 ms); never CANCELLED or INVALID_ARGUMENT for
      // a call that timed out.
      const bool deadline =
          absl::StrContains(line, "\"code\":\"DEADLINE_EXCEEDED\"");
      const bool queue_full =
          absl::StrContains(line, "\"code\":\"RESOURCE_EXHAUSTED\"") &&
          absl::StrContains(line, "waiting to be decoded");
      const bool answered = absl::StrContains(line, "\"code\":\"OK\"");
      EXPECT_TRUE(deadline || queue_full || answered) << line;
    }
  }
  // Calls refused by gRPC itself before a handler ran leave no line.
  EXPECT_GT(storm_lines, 0);
  ExpectOnlyJsonLines(*server_);
}

// Clients that vanish: before the config, after some audio, while results
// are written; by cancelling and by dropping the connection. Nothing may
// stay running, every call is logged with CANCELLED, and the server serves
// the next client normally.
TEST_F(Attack, DisconnectsMidStream) {
  StartServer({});
  constexpr int kStreams = 24;
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      auto channel = OwnConnection(*server_, 100 + i);
      auto stub = v1::Diarization::NewStub(channel);
      auto context = std::make_unique<grpc::ClientContext>();
      context->set_deadline(In(120));
      auto stream = stub->Diarize(context.get());
      if (i % 4 != 0) {
        v1::DiarizationConfig c = RawConfig(absl::StrFormat("gone-%d", i));
        c.mutable_options()->set_partial_results(true);
        c.mutable_options()->set_partial_interval_s(1);
        stream->Write(ConfigRequest(c));
        v1::DiarizeRequest chunk;
        chunk.set_audio(Pcm(3 + i % 5 * 4, 200 + i));
        stream->Write(chunk);
      }
      absl::SleepFor(absl::Milliseconds(200 + 150 * (i % 7)));
      context->TryCancel();
      stream->Finish();
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(WaitFor(*server_, Idle, 30)) << server_->Log();
  int lines = 0;
  for (const std::string& line : LogLines(*server_, "Diarize")) {
    ++lines;
    EXPECT_THAT(line, HasSubstr("\"code\":\"CANCELLED\""));
  }
  EXPECT_EQ(lines, kStreams);
  VictimOutcome victim = PacedStream(*server_, 6, "after");
  ExpectVictimServed(victim, 6, *server_, /*baseline_s=*/-1);
  ExpectOnlyJsonLines(*server_);
}

// SIGTERM while streams run, uploads wait and idle streams are open:
// accepted work completes with results, idle streams are cut at once, the
// process exits 0 well before the drain timeout.
TEST_F(Attack, SigtermUnderLoad) {
  StartServer({"--drain_timeout_s=120"});
  constexpr int kStreams = 4, kIdle = 6;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<
      grpc::ClientReaderWriter<v1::DiarizeRequest, v1::DiarizeResponse>>>
      streams;
  std::vector<std::unique_ptr<v1::Diarization::Stub>> stubs;
  for (int i = 0; i < kStreams + kIdle; ++i) {
    stubs.push_back(v1::Diarization::NewStub(OwnConnection(*server_, i)));
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->set_deadline(In(120));
    streams.push_back(stubs.back()->Diarize(contexts.back().get()));
    if (i < kStreams) {
      ASSERT_TRUE(streams.back()->Write(ConfigRequest(RawConfig("busy"))));
      v1::DiarizeRequest chunk;
      chunk.set_audio(Pcm(12, 300 + i));
      ASSERT_TRUE(streams.back()->Write(chunk));
    }
  }
  grpc::Status upload_status;
  std::thread upload([&] {
    auto stub = v1::Diarization::NewStub(OwnConnection(*server_, 99));
    grpc::ClientContext context;
    context.set_deadline(In(120));
    v1::DiarizeResult r;
    upload_status = server::testing::DiarizeFile(*stub, RawConfig("upload"),
                                                 Pcm(15, 400), &r, &context);
  });
  ASSERT_TRUE(WaitFor(
      *server_,
      [](const v1::ServerInfo& i) { return i.active_jobs() >= kStreams + 1; },
      30));
  const absl::Time start = absl::Now();
  server_->Signal(SIGTERM);
  for (int i = 0; i < kStreams; ++i) {
    streams[i]->WritesDone();
    v1::DiarizeResponse response;
    bool got_final = false;
    while (streams[i]->Read(&response)) got_final |= response.has_final();
    grpc::Status s = streams[i]->Finish();
    EXPECT_TRUE(s.ok()) << i << ": " << s.error_message();
    EXPECT_TRUE(got_final) << i;
  }
  upload.join();
  EXPECT_TRUE(upload_status.ok()) << upload_status.error_message();
  for (int i = kStreams; i < kStreams + kIdle; ++i) {
    EXPECT_NE(streams[i]->Finish().error_code(), grpc::StatusCode::OK);
  }
  EXPECT_EQ(server_->Wait(), 0) << server_->Log();
  const double exit_s = absl::ToDoubleSeconds(absl::Now() - start);
  std::fprintf(stderr, "SIGTERM to exit under load: %.2f s\n", exit_s);
  EXPECT_LT(exit_s, 60.0);
  ExpectOnlyJsonLines(*server_);
}

// A broken MP3 upload: libmpg123 (through its own API, quiet) finds no
// frame; the call is refused and the log stays JSON (libmpg123 behind
// libsndfile used to print "Note: Illegal Audio-MPEG-Header ..." lines).
TEST_F(Attack, Mp3UploadIsRefusedWithoutNonJsonLog) {
  StartServer({});
  auto stub = server_->NewStub();
  // An MPEG-1 Layer III frame header followed by zeros.
  std::string mp3 = "\xff\xfb\x90\x64";
  mp3 += std::string(4000, '\0');
  v1::DiarizationConfig config;
  config.mutable_audio()->set_encoding(v1::ENCODED);
  v1::DiarizeResult r;
  grpc::ClientContext context;
  context.set_deadline(In(10));
  grpc::Status s =
      server::testing::DiarizeFile(*stub, config, mp3, &r, &context);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("MP3"));
  ExpectOnlyJsonLines(*server_);
}

}  // namespace
}  // namespace diarization::testing
