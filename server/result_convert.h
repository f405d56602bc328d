// Conversions between the API's messages and the engine's types: validated
// config → engine job options; engine results → the API's DiarizeResult /
// PartialResult. (Config → decoder format: request_validation.h.)
#ifndef DIARIZATION_SERVER_RESULT_CONVERT_H_
#define DIARIZATION_SERVER_RESULT_CONVERT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "diarization/v1/diarization.pb.h"
#include "engine/audio/audio.h"
#include "engine/pipeline/speaker_labeler.h"
#include "engine/runtime/engine.h"
#include "server/request_validation.h"

namespace diarization::server {

// The engine job for a validated config. `deadline` is the earlier of the
// client's deadline and the stream-duration limit (InfiniteFuture: none).
runtime::JobOptions ToJobOptions(const ValidatedConfig& config,
                                 absl::Time deadline);

// Fills `out` from a finished job: the view the config asks for
// (regular/exclusive), RTTM text, centroids when asked, timings; the
// exclusive view again with both_views. `labeler` (null: pyannote's labels
// as they are) renames the speakers (known speakers, stable labels) and
// adds the identities when it has known speakers.
void FillResult(const runtime::JobResult& result, const ValidatedConfig& config,
                v1::DiarizeResult* out,
                pipeline::SpeakerLabeler* labeler = nullptr);

// The call log's fields for a job's TailTimes (RequestLogEntry::extra):
// tail_s (the total), tail_segmentation_wait_s, tail_segmentation_s,
// tail_embedding_wait_s, tail_embedding_s, tail_host_wait_s,
// tail_clustering_s, tail_delivery_s, and the host pool's load when the
// final clustering was queued: tail_finals_running, tail_partials_running,
// tail_finals_queued.
std::vector<std::pair<std::string, double>> TailLogFields(
    const runtime::TailTimes& tail);

// Fills `out` from a provisional clustering; `provisional` is always true.
void FillPartial(const runtime::PartialResult& partial,
                 const ValidatedConfig& config, v1::PartialResult* out,
                 pipeline::SpeakerLabeler* labeler = nullptr);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_RESULT_CONVERT_H_
