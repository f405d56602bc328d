#include "server/get_info.h"

#include <cctype>
#include <cstring>
#include <memory>
#include <string>

#include "engine/audio/audio.h"
#include "server/identification.h"

namespace diarization::server {
std::string WithoutHostPaths(const std::string& text) {
  // A path starts at '/', "~/" or "X:\\" after a boundary and runs to
  // whitespace, a quote or closing punctuation.
  constexpr char kBefore[] = " \t\n([{\"'=:,";
  constexpr char kAfter[] = " \t\n)]}\"',;";
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const bool boundary =
        i == 0 || std::strchr(kBefore, text[i - 1]) != nullptr;
    const bool starts =
        boundary &&
        (text[i] == '/' || text.compare(i, 2, "~/") == 0 ||
         (i + 2 < text.size() &&
          std::isalpha(static_cast<unsigned char>(text[i])) &&
          text[i + 1] == ':' && (text[i + 2] == '\\' || text[i + 2] == '/')));
    if (!starts) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && std::strchr(kAfter, text[end]) == nullptr) {
      ++end;
    }
    const std::string path = text.substr(i, end - i);
    out += path.substr(path.find_last_of("/\\") + 1);
    i = end;
  }
  return out;
}

void FillServerInfo(const ServiceState& state, v1::ServerInfo* info) {
  info->set_version(state.version());
  info->set_git_commit(state.commit());
  for (const v1::ModelInfo& m : state.models()) {
    v1::ModelInfo* out = info->add_models();
    *out = m;
    out->set_source(WithoutHostPaths(m.source()));
  }
  if (std::shared_ptr<runtime::Engine> engine = state.engine()) {
    for (const runtime::DeviceStatus& d : engine->Devices()) {
      v1::DeviceInfo* out = info->add_devices();
      out->set_name(d.name);
      out->set_description(d.description);
      out->set_healthy(d.healthy);
      out->set_segmentation_precision(d.segmentation_precision);
      out->set_embedding_precision(d.embedding_precision);
      out->set_memory_total_bytes(d.memory.device_total_bytes);
      out->set_arena_reserved_bytes(d.memory.arena_reserved_bytes);
      out->set_arena_used_bytes(d.memory.arena_used_bytes);
      out->set_arena_peak_bytes(d.memory.arena_peak_bytes);
      out->set_active_jobs(d.active_jobs);
      out->set_memory_free_bytes(d.memory.device_free_bytes);
      out->set_backlog_audio_s(d.backlog_audio_s);
      out->set_rtfx(d.rtfx);
    }
    info->set_backlog_audio_s(engine->backlog_audio_s());
    info->set_active_jobs(engine->active_jobs());
  }
  const ServiceLimits& l = state.limits();
  v1::Limits* limits = info->mutable_limits();
  limits->set_max_message_bytes(l.max_message_bytes);
  limits->set_max_audio_s_per_request(l.max_audio_s_per_request);
  limits->set_max_stream_duration_s(l.max_stream_duration_s);
  limits->set_max_concurrent_streams(l.max_concurrent_streams);
  limits->set_max_backlog_audio_s(l.max_backlog_audio_s);
  limits->set_max_sample_rate_hz(l.max_sample_rate_hz);
  limits->set_max_channel_count(l.max_channel_count);
  limits->set_min_sample_rate_hz(l.min_sample_rate_hz);
  limits->set_max_speakers(l.max_speakers);
  limits->set_min_partial_interval_s(l.min_partial_interval_s);
  limits->set_max_known_speakers(kMaxKnownSpeakers);
  info->set_state(ServingStateName(state.state()));
  info->set_open_calls(state.open_calls());
  for (const std::string& format : audio::AcceptedFormats()) {
    info->add_accepted_formats(format);
  }
}

}  // namespace diarization::server
