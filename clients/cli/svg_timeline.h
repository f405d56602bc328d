// A diarization as an SVG picture a person can open in a browser: one lane
// per speaker (in order of first appearance), a bar for each segment, the
// stretches where two or more speakers talk at once shaded across the lanes
// and drawn again in an "overlap" lane, and a time axis with round ticks.
//
// Every element that stands for data carries its values as attributes
// (data-speaker, data-start, data-end), so tools and tests can read the
// picture back without measuring pixels.
#ifndef DIARIZATION_CLIENTS_CLI_SVG_TIMELINE_H_
#define DIARIZATION_CLIENTS_CLI_SVG_TIMELINE_H_

#include <string>
#include <vector>

namespace diarization::client {

struct TimelineSegment {
  double start_s = 0;
  double end_s = 0;
  std::string speaker;
};

// Where things go, in SVG user units (pixels).
struct TimelineGeometry {
  double width = 1200;       // whole picture
  double label_width = 130;  // left column with the speaker names
  double right_margin = 20;
  double top = 44;  // title above the first lane
  double lane_height = 26;
  double lane_gap = 8;
  double axis_height = 40;  // below the last lane
};

// x of time `t` in a picture spanning [0, duration_s].
double TimelineX(const TimelineGeometry& g, double duration_s, double t);

// The seconds between ticks for `duration_s` of audio: the smallest of 0.1,
// 0.2, 0.5, 1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min, 1, 2 h (then
// whole hours) that gives at most 12 intervals.
double TimelineTickStep(double duration_s);

// Intervals where at least two speakers' segments overlap (merged, sorted).
std::vector<TimelineSegment> OverlapRegions(
    const std::vector<TimelineSegment>& segments);

// The SVG document. `duration_s` is the audio's length (the axis end); a
// segment past it extends the axis. `title` is shown on top (escaped).
std::string SvgTimeline(const std::vector<TimelineSegment>& segments,
                        double duration_s, const std::string& title,
                        const TimelineGeometry& geometry = {});

}  // namespace diarization::client

#endif  // DIARIZATION_CLIENTS_CLI_SVG_TIMELINE_H_
