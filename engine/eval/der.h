// Diarization error rate, with pyannote.metrics' exact semantics
// (pyannote.metrics 4.2 DiarizationErrorRate, on pyannote.core 6.1).
//
// For one file:
//   1. The evaluated region (uem) is the one given, else the union of the
//      reference's and the hypothesis' extents: the single interval from the
//      earliest start to the latest end of either (pyannote's default,
//      UEMSupportMixin.uemify).
//   2. Removed from it: a collar of `collar_s` seconds centred on every
//      reference segment boundary (collar_s / 2 on each side), and, with
//      skip_overlap, every region where two reference tracks intersect.
//   3. Reference and hypothesis are cropped to what is left.
//   4. Hypothesis speakers are mapped one-to-one to reference speakers to
//      maximise their total co-occurrence (Hungarian algorithm, as
//      pyannote's HungarianMapper); unmapped ones match nothing.
//   5. On every piece of the common segmentation of both, with duration d,
//      N_ref reference and N_hyp hypothesis tracks and N_correct matched
//      tracks (same speaker after mapping):
//        total       += d * N_ref
//        missed      += d * max(0, N_ref - N_hyp)
//        false alarm += d * max(0, N_hyp - N_ref)
//        confusion   += d * (min(N_ref, N_hyp) - N_correct)
//      DER = (missed + false alarm + confusion) / total; with total = 0 it is
//      0 when there is no error and 1 otherwise.
// Like pyannote.core, a segment of 1 µs or less is empty (SEGMENT_PRECISION).
// Float64 throughout. Several files: components are summed over files (by
// uri) and the DER is computed from the sums, as abs(metric) in pyannote.
#ifndef DIARIZATION_ENGINE_EVAL_DER_H_
#define DIARIZATION_ENGINE_EVAL_DER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/pipeline/segment.h"

namespace diarization::eval {

struct DerOptions {
  // Total collar width around each reference boundary, in seconds.
  double collar_s = 0.0;
  // Do not evaluate regions where reference speakers overlap.
  bool skip_overlap = false;
};

// Durations in seconds.
struct DerComponents {
  double total_s = 0.0;  // reference speech (times number of speakers)
  double correct_s = 0.0;
  double missed_s = 0.0;
  double false_alarm_s = 0.0;
  double confusion_s = 0.0;

  // pyannote's compute_metric.
  double der() const;
  DerComponents& operator+=(const DerComponents& other);
};

// An evaluated region [start_s, end_s).
struct Interval {
  double start_s = 0.0;
  double end_s = 0.0;
};

// DER of one file. Segment uris are ignored. `uem` null: pyannote's default
// (union of extents). Errors: negative or non-finite collar, segments with
// non-finite times or end before start.
absl::StatusOr<DerComponents> ComputeDer(
    const std::vector<Segment>& reference,
    const std::vector<Segment>& hypothesis, const DerOptions& options = {},
    const std::vector<Interval>* uem = nullptr);

struct FileDer {
  std::string uri;
  DerComponents components;
};

struct CorpusDer {
  std::vector<FileDer> files;  // sorted by uri
  DerComponents total;
};

// DER over several files, grouped by Segment::uri. Every uri of either side
// is scored; a side without that uri counts as empty (a hypothesis for a file
// missing from the reference is all false alarm, with default uem). `uem`
// (by uri, see uem.h) gives a file's evaluated regions; a file it does not
// list gets the default.
absl::StatusOr<CorpusDer> ComputeCorpusDer(
    const std::vector<Segment>& reference,
    const std::vector<Segment>& hypothesis, const DerOptions& options = {},
    const std::map<std::string, std::vector<Interval>>* uem = nullptr);

}  // namespace diarization::eval

#endif  // DIARIZATION_ENGINE_EVAL_DER_H_
