#include "clients/cli/svg_timeline.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace diarization::client {

namespace {

// Distinguishable colours (Tableau 10); lanes past ten reuse them.
constexpr const char* kColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                    "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                                    "#9c755f", "#bab0ac"};
constexpr const char* kOverlapColour = "#222222";

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 forbids most control characters even escaped.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;
    }
  }
  return out;
}

std::string TickLabel(double t, double step) {
  if (t >= 60) {
    const int minutes = static_cast<int>(t / 60);
    const double seconds = t - 60 * minutes;
    return step >= 1 ? absl::StrFormat("%d:%02.0f", minutes, seconds)
                     : absl::StrFormat("%d:%04.1f", minutes, seconds);
  }
  return step >= 1 ? absl::StrFormat("%.0f s", t)
                   : absl::StrFormat("%.1f s", t);
}

}  // namespace

double TimelineX(const TimelineGeometry& g, double duration_s, double t) {
  const double plot = g.width - g.label_width - g.right_margin;
  return g.label_width + (duration_s > 0 ? t / duration_s : 0) * plot;
}

double TimelineTickStep(double duration_s) {
  // Seconds, then round minutes and hours, so long files read as clock time.
  constexpr double kSteps[] = {0.1, 0.2, 0.5, 1,   2,   5,    10,   15,  30,
                               60,  120, 300, 600, 900, 1800, 3600, 7200};
  const double raw = duration_s / 12;
  for (double step : kSteps) {
    if (step >= raw) return step;
  }
  return 3600 * std::ceil(raw / 3600);
}

std::vector<TimelineSegment> OverlapRegions(
    const std::vector<TimelineSegment>& segments) {
  // Sweep over boundaries: +1 at a start, -1 at an end (ends first at a tie,
  // so touching segments do not overlap).
  std::vector<std::pair<double, int>> events;
  for (const TimelineSegment& s : segments) {
    if (s.end_s <= s.start_s) continue;
    events.push_back({s.start_s, +1});
    events.push_back({s.end_s, -1});
  }
  std::sort(events.begin(), events.end());
  std::vector<TimelineSegment> out;
  int active = 0;
  double since = 0;
  for (const auto& [t, delta] : events) {
    const int before = active;
    active += delta;
    if (before < 2 && active >= 2) since = t;
    if (before >= 2 && active < 2 && t > since) {
      if (!out.empty() && out.back().end_s >= since) {
        out.back().end_s = t;
      } else {
        out.push_back({since, t, "overlap"});
      }
    }
  }
  return out;
}

std::string SvgTimeline(const std::vector<TimelineSegment>& segments,
                        double duration_s, const std::string& title,
                        const TimelineGeometry& g) {
  std::vector<std::string> speakers;
  std::map<std::string, int> lane;
  for (const TimelineSegment& s : segments) {
    duration_s = std::max(duration_s, s.end_s);
    if (lane.emplace(s.speaker, static_cast<int>(speakers.size())).second) {
      speakers.push_back(s.speaker);
    }
  }
  const std::vector<TimelineSegment> overlaps = OverlapRegions(segments);
  const int lanes = static_cast<int>(speakers.size()) + 1;  // + overlap lane
  const double lanes_bottom = g.top + lanes * (g.lane_height + g.lane_gap);
  const double height = lanes_bottom + g.axis_height;
  auto lane_y = [&](int i) { return g.top + i * (g.lane_height + g.lane_gap); };
  auto x = [&](double t) { return TimelineX(g, duration_s, t); };

  std::string out = absl::StrFormat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
      "font-size=\"13\" data-duration=\"%.3f\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.1f\" y=\"24\" font-size=\"15\" "
      "font-weight=\"bold\">%s</text>\n",
      g.width, height, g.width, height, duration_s, g.label_width,
      Escape(title));

  // Lane backgrounds and names.
  for (int i = 0; i < lanes; ++i) {
    const bool overlap_lane = i == lanes - 1;
    absl::StrAppendFormat(
        &out,
        "<rect class=\"lane\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
        "height=\"%.1f\" fill=\"%s\"/>\n"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\"%s>%s</text>\n",
        x(0), lane_y(i), x(duration_s) - x(0), g.lane_height,
        i % 2 == 0 ? "#f4f4f4" : "#ebebeb", g.label_width - 8,
        lane_y(i) + g.lane_height * 0.68,
        overlap_lane ? " font-style=\"italic\"" : "",
        overlap_lane ? "overlap" : Escape(speakers[i]));
  }
  // Overlap: a band across every lane, then a bar in its own lane.
  for (const TimelineSegment& o : overlaps) {
    absl::StrAppendFormat(
        &out,
        "<rect class=\"overlap-band\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
        "height=\"%.1f\" fill=\"%s\" fill-opacity=\"0.12\"/>\n"
        "<rect class=\"overlap\" data-start=\"%.3f\" data-end=\"%.3f\" "
        "x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"/>\n",
        x(o.start_s), g.top, x(o.end_s) - x(o.start_s),
        lanes_bottom - g.lane_gap - g.top, kOverlapColour, o.start_s, o.end_s,
        x(o.start_s), lane_y(lanes - 1), x(o.end_s) - x(o.start_s),
        g.lane_height, kOverlapColour);
  }
  for (const TimelineSegment& s : segments) {
    const int i = lane[s.speaker];
    absl::StrAppendFormat(
        &out,
        "<rect class=\"speech\" data-speaker=\"%s\" data-start=\"%.3f\" "
        "data-end=\"%.3f\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
        "height=\"%.1f\" rx=\"2\" fill=\"%s\"><title>%s %.3f-%.3f s</title>"
        "</rect>\n",
        Escape(s.speaker), s.start_s, s.end_s, x(s.start_s), lane_y(i) + 2,
        std::max(0.5, x(s.end_s) - x(s.start_s)), g.lane_height - 4,
        kColours[i % 10], Escape(s.speaker), s.start_s, s.end_s);
  }
  // Time axis.
  const double axis_y = lanes_bottom;
  absl::StrAppendFormat(&out,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                        "stroke=\"black\"/>\n",
                        x(0), axis_y, x(duration_s), axis_y);
  const double step = TimelineTickStep(duration_s);
  for (int k = 0; k * step <= duration_s + 1e-9; ++k) {
    const double t = k * step;
    absl::StrAppendFormat(
        &out,
        "<line class=\"tick\" data-t=\"%.3f\" x1=\"%.2f\" y1=\"%.1f\" "
        "x2=\"%.2f\" y2=\"%.1f\" stroke=\"black\"/>\n"
        "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
        t, x(t), axis_y, x(t), axis_y + 6, x(t), axis_y + 20,
        TickLabel(t, step));
  }
  out += "</svg>\n";
  return out;
}

}  // namespace diarization::client
