// Discrete diarization → speaker turns → labelled segments (pipeline.md §11
// and §12; pyannote utils/signal.py Binarize with onset = offset = 0.5,
// pyannote.core Annotation.support / labels / rename_labels). Timestamps are
// frame middles in float64.
#ifndef DIARIZATION_ENGINE_PIPELINE_SEGMENTS_H_
#define DIARIZATION_ENGINE_PIPELINE_SEGMENTS_H_

#include <map>
#include <string>
#include <vector>

#include "engine/pipeline/reconstruction.h"
#include "engine/pipeline/segment.h"

namespace diarization::pipeline {

// One active region of column `column` (pyannote's integer label).
struct Turn {
  double start_s = 0.0;
  double end_s = 0.0;
  int column = 0;
};

// Binarize every column; regions separated by gaps shorter than
// `min_duration_off` are merged (Annotation.support(collar)). Turns of
// length <= 1e-6 s are dropped, as pyannote.core's empty segments.
std::vector<Turn> Binarize(const DiscreteDiarization& discrete,
                           double min_duration_off);

// pyannote's label mapping: the columns that have turns, sorted by str(k),
// → SPEAKER_00, SPEAKER_01, ...
std::map<int, std::string> SpeakerLabels(const std::vector<Turn>& turns);

// Segments with their mapped labels, in pyannote's RTTM order: by (start,
// end), then track name ('A', 'B', ... per column, as string).
std::vector<Segment> ToSegments(const std::vector<Turn>& turns,
                                const std::map<int, std::string>& labels,
                                const std::string& uri);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_SEGMENTS_H_
