#include "server/voiceprint_call.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "engine/common/shapes.h"
#include "engine/pipeline/voiceprint.h"
#include "server/identification.h"
#include "server/status_util.h"

namespace diarization::server {

absl::Status ValidateSpeechRanges(const v1::CreateVoiceprintRequest& request) {
  if (request.speech_size() > kMaxSpeechRanges) {
    return absl::InvalidArgumentError(
        absl::StrCat("speech has ", request.speech_size(), " ranges; at most ",
                     kMaxSpeechRanges, " are allowed"));
  }
  for (int i = 0; i < request.speech_size(); ++i) {
    const v1::TimeRange& r = request.speech(i);
    if (!std::isfinite(r.start_s()) || !std::isfinite(r.end_s()) ||
        r.start_s() < 0 || r.end_s() <= r.start_s()) {
      return absl::InvalidArgumentError(
          absl::StrCat("speech[", i, "] is [", r.start_s(), ", ", r.end_s(),
                       "); a range needs 0 <= start_s < end_s, both finite"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> SelectSpeech(
    std::vector<float>&& samples, const v1::CreateVoiceprintRequest& request) {
  if (request.speech_size() == 0) return std::move(samples);
  const int64_t n = static_cast<int64_t>(samples.size());
  std::vector<float> out;
  for (int i = 0; i < request.speech_size(); ++i) {
    const v1::TimeRange& r = request.speech(i);
    const int64_t begin = std::llround(r.start_s() * kSampleRateHz);
    const int64_t end =
        std::min<int64_t>(n, std::llround(r.end_s() * kSampleRateHz));
    if (begin >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("speech[", i, "] starts at ", r.start_s(),
                       " s, at or after the end of the audio (",
                       static_cast<double>(n) / kSampleRateHz, " s)"));
    }
    out.insert(out.end(), samples.begin() + begin, samples.begin() + end);
  }
  return out;
}

absl::Status FillVoiceprint(const runtime::JobResult& result,
                            std::string_view embedding_sha256,
                            v1::Voiceprint* out) {
  absl::StatusOr<pipeline::VoiceprintEmbedding> vp =
      pipeline::DominantSpeakerVoiceprint(result.output.exclusive_segments,
                                          result.output.labels,
                                          result.output.centroids);
  if (!vp.ok()) return AsApiStatus(vp.status());
  out->set_embedding(EncodeEmbedding(vp->embedding));
  out->set_model_sha256(std::string(embedding_sha256));
  out->set_speech_seconds(vp->speech_s);
  out->set_version(kVoiceprintVersion);
  return absl::OkStatus();
}

}  // namespace diarization::server
