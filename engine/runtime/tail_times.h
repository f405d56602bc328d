// Where a finished job's time went after the end of its audio
// (JobResult::tail; the diarization_tail_seconds histogram).
#ifndef DIARIZATION_ENGINE_RUNTIME_TAIL_TIMES_H_
#define DIARIZATION_ENGINE_RUNTIME_TAIL_TIMES_H_

#include <array>
#include <string_view>
#include <utility>

namespace diarization::runtime {

// Where a job's time went from the end of its audio (Finish, or Submit) to
// the delivery of its result (the call of on_complete), seconds. The seven
// parts follow one another and add up to total_s. The network parts follow
// the job's last window to get its embeddings (the critical one); the part
// of its path that lay before the end of the audio counts as 0, so all are
// 0 when every window was through both networks by then.
struct TailTimes {
  // The last window: queued for its segmentation batch; in that batch;
  // from the batch's end to its embedding batch's start (the masks, then
  // the embedding queue); in the embedding batch.
  double segmentation_wait_s = 0.0;
  double segmentation_s = 0.0;
  double embedding_wait_s = 0.0;
  double embedding_s = 0.0;
  // From the last window's embeddings to a host thread taking the final
  // clustering (host threads busy with other clusterings).
  double host_wait_s = 0.0;
  // Gathering the windows' outputs and the cluster function
  // (pipeline::Diarize) on the host thread.
  double clustering_s = 0.0;
  // From the clustering's end to the call of on_complete (the completion's
  // turn on the callback threads).
  double delivery_s = 0.0;
  double total_s = 0.0;
  // The host pool when the final clustering was queued: clusterings running
  // (final, provisional) and final clusterings queued ahead of this one.
  int finals_running = 0;
  int partials_running = 0;
  int finals_queued = 0;

  // The durations above by name, the total first: the `part` label of
  // diarization_tail_seconds, and tail_<name>_s in the server's call log
  // (tail_s for the total). One list, so the two never disagree.
  std::array<std::pair<std::string_view, double>, 8> Parts() const {
    return {{{"total", total_s},
             {"segmentation_wait", segmentation_wait_s},
             {"segmentation", segmentation_s},
             {"embedding_wait", embedding_wait_s},
             {"embedding", embedding_s},
             {"host_wait", host_wait_s},
             {"clustering", clustering_s},
             {"delivery", delivery_s}}};
  }
};

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_TAIL_TIMES_H_
