#include "server/result_convert.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/pipeline/rttm.h"

namespace diarization::server {
namespace {

void AddSegments(const std::vector<Segment>& segments,
                 google::protobuf::RepeatedPtrField<v1::Segment>* out) {
  out->Reserve(static_cast<int>(segments.size()));
  for (const Segment& s : segments) {
    v1::Segment* seg = out->Add();
    seg->set_start_s(s.start_s);
    seg->set_end_s(s.end_s);
    seg->set_speaker(s.speaker);
  }
}

void AddIdentities(
    const std::vector<pipeline::LabelledSpeaker>& speakers,
    google::protobuf::RepeatedPtrField<v1::SpeakerIdentity>* out) {
  for (const pipeline::LabelledSpeaker& s : speakers) {
    v1::SpeakerIdentity* id = out->Add();
    id->set_speaker(s.label);
    id->set_best_known_label(s.identity.best_label);
    id->set_best_score(s.identity.best_score);
    id->set_matched(!s.identity.matched_label.empty());
  }
}

}  // namespace

runtime::JobOptions ToJobOptions(const ValidatedConfig& config,
                                 absl::Time deadline) {
  runtime::JobOptions o;
  o.request_id = config.request_id;
  o.config = config.fast ? pipeline::PipelineConfig::Fast()
                         : pipeline::PipelineConfig::Accurate();
  o.hints.num_speakers = config.num_speakers;
  o.hints.min_speakers = config.min_speakers;
  o.hints.max_speakers = config.max_speakers;
  o.deadline = deadline;
  o.partial_interval_s = config.partial_results ? config.partial_interval_s : 0;
  return o;
}

void FillResult(const runtime::JobResult& result, const ValidatedConfig& config,
                v1::DiarizeResult* out, pipeline::SpeakerLabeler* labeler) {
  // Copies only when something is renamed; otherwise the engine's output
  // as it is (pyannote's labels, byte for byte).
  std::vector<Segment> regular_copy, exclusive_copy;
  const std::vector<Segment>* regular = &result.output.segments;
  const std::vector<Segment>* exclusive = &result.output.exclusive_segments;
  std::vector<std::string> labels = result.output.labels;
  std::vector<pipeline::LabelledSpeaker> speakers;
  if (labeler != nullptr) {
    regular_copy = *regular;
    exclusive_copy = *exclusive;
    regular = &regular_copy;
    exclusive = &exclusive_copy;
    speakers = labeler->Apply(result.output.labels, result.output.centroids,
                              {&regular_copy, &exclusive_copy});
    for (size_t i = 0; i < speakers.size(); ++i) labels[i] = speakers[i].label;
  }
  const std::vector<Segment>& segments =
      config.exclusive ? *exclusive : *regular;
  out->set_request_id(config.request_id);
  AddSegments(segments, out->mutable_segments());
  std::set<std::string> speaker_set;
  for (const Segment& s : segments) speaker_set.insert(s.speaker);
  out->set_speaker_count(static_cast<int>(speaker_set.size()));
  if (config.return_centroids) {
    const auto& centroids = result.output.centroids;
    for (size_t i = 0; i < labels.size() && i < centroids.size(); ++i) {
      v1::SpeakerCentroid* c = out->add_centroids();
      c->set_speaker(labels[i]);
      c->mutable_embedding()->Add(centroids[i].begin(), centroids[i].end());
    }
  }
  out->set_rttm(FormatRttm(segments, config.uri));
  out->set_audio_s(result.audio_s);
  out->set_processing_s(result.processing_s);
  out->set_rtfx(result.rtfx);
  out->set_device(result.device);
  if (config.both_views) {
    AddSegments(*exclusive, out->mutable_exclusive_segments());
    out->set_exclusive_rttm(FormatRttm(*exclusive, config.uri));
  }
  if (labeler != nullptr && labeler->has_known_speakers()) {
    AddIdentities(speakers, out->mutable_identities());
  }
}

std::vector<std::pair<std::string, double>> TailLogFields(
    const runtime::TailTimes& tail) {
  std::vector<std::pair<std::string, double>> fields;
  for (const auto& [part, seconds] : tail.Parts()) {
    fields.emplace_back(part == "total"
                            ? std::string("tail_s")
                            : absl::StrCat("tail_", std::string(part), "_s"),
                        seconds);
  }
  fields.emplace_back("tail_finals_running", tail.finals_running);
  fields.emplace_back("tail_partials_running", tail.partials_running);
  fields.emplace_back("tail_finals_queued", tail.finals_queued);
  return fields;
}

void FillPartial(const runtime::PartialResult& partial,
                 const ValidatedConfig& config, v1::PartialResult* out,
                 pipeline::SpeakerLabeler* labeler) {
  std::vector<Segment> regular = partial.segments;
  std::vector<Segment> exclusive = partial.exclusive_segments;
  std::vector<pipeline::LabelledSpeaker> speakers;
  if (labeler != nullptr) {
    speakers = labeler->Apply(partial.labels, partial.centroids,
                              {&regular, &exclusive});
  }
  out->set_request_id(config.request_id);
  out->set_audio_received_s(partial.audio_received_s);
  out->set_audio_processed_s(partial.audio_processed_s);
  AddSegments(config.exclusive ? exclusive : regular, out->mutable_segments());
  out->set_provisional(true);
  if (config.both_views) {
    AddSegments(exclusive, out->mutable_exclusive_segments());
  }
  if (labeler != nullptr && labeler->has_known_speakers()) {
    AddIdentities(speakers, out->mutable_identities());
  }
}

}  // namespace diarization::server
