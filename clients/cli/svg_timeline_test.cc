#include "clients/cli/svg_timeline.h"

#include <cstdio>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace diarization::client {
namespace {

struct Rect {
  std::string cls, speaker;
  double start = 0, end = 0, x = 0, width = 0;
};

// The data-bearing rects, read back from the SVG text.
std::vector<Rect> Rects(const std::string& svg) {
  std::vector<Rect> out;
  const std::regex rect(
      R"re(<rect class="(speech|overlap)"(?: data-speaker="([^"]*)")? )re"
      R"re(data-start="([0-9.]+)" data-end="([0-9.]+)" x="([0-9.]+)" )re"
      R"re(y="[0-9.]+" width="([0-9.]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    out.push_back({m[1], m[2], std::stod(m[3]), std::stod(m[4]),
                   std::stod(m[5]), std::stod(m[6])});
  }
  return out;
}

TEST(SvgTimeline, KnownConversation) {
  // A and B overlap on [4, 5); C alone later; B's two turns share a lane.
  const std::vector<TimelineSegment> segments = {{0.5, 5.0, "SPEAKER_00"},
                                                 {4.0, 8.0, "SPEAKER_01"},
                                                 {9.0, 12.0, "SPEAKER_02"},
                                                 {12.5, 14.0, "SPEAKER_01"}};
  const std::string svg = SvgTimeline(segments, 20.0, "meeting <1> & co");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("meeting &lt;1&gt; &amp; co"), std::string::npos);
  EXPECT_EQ(svg.find("<1>"), std::string::npos);

  const TimelineGeometry g;
  const double plot = g.width - g.label_width - g.right_margin;  // 1050
  std::vector<Rect> speech, overlap;
  for (const Rect& r : Rects(svg))
    (r.cls == "speech" ? speech : overlap).push_back(r);
  ASSERT_EQ(speech.size(), 4u);
  EXPECT_EQ(speech[0].speaker, "SPEAKER_00");
  EXPECT_NEAR(speech[0].x, g.label_width + 0.5 / 20 * plot, 0.01);
  EXPECT_NEAR(speech[0].width, 4.5 / 20 * plot, 0.01);
  ASSERT_EQ(overlap.size(), 1u);
  EXPECT_DOUBLE_EQ(overlap[0].start, 4.0);
  EXPECT_DOUBLE_EQ(overlap[0].end, 5.0);

  // Lanes: three speakers (first-appearance order) + the overlap lane; one
  // tick every 2 s from 0 to 20.
  const std::regex lane(R"(<rect class="lane")");
  EXPECT_EQ(std::distance(std::sregex_iterator(svg.begin(), svg.end(), lane),
                          std::sregex_iterator()),
            4);
  const std::regex tick(R"re(class="tick" data-t="([0-9.]+)")re");
  std::vector<double> ticks;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick);
       it != std::sregex_iterator(); ++it) {
    ticks.push_back(std::stod((*it)[1]));
  }
  ASSERT_EQ(ticks.size(), 11u);
  EXPECT_DOUBLE_EQ(ticks[1], 2.0);
  EXPECT_DOUBLE_EQ(ticks.back(), 20.0);
}

TEST(SvgTimeline, TouchingSegmentsDoNotOverlap) {
  EXPECT_TRUE(OverlapRegions({{0, 1, "A"}, {1, 2, "B"}}).empty());
  EXPECT_TRUE(OverlapRegions({{0, 3, "A"}, {3, 3, "B"}}).empty());
}

TEST(SvgTimeline, TickSteps) {
  EXPECT_DOUBLE_EQ(TimelineTickStep(1.0), 0.1);
  EXPECT_DOUBLE_EQ(TimelineTickStep(12.0), 1);
  EXPECT_DOUBLE_EQ(TimelineTickStep(45.0), 5);
  EXPECT_DOUBLE_EQ(TimelineTickStep(600.0), 60);
  EXPECT_DOUBLE_EQ(TimelineTickStep(3600.0), 300);
  EXPECT_DOUBLE_EQ(TimelineTickStep(30 * 3600.0), 3 * 3600);
}

// Fresh random segments: the overlap regions equal a brute-force count of
// active speakers on a fine grid, and every segment is drawn where the
// geometry says.
TEST(SvgTimeline, RandomSegmentsMatchBruteForce) {
  const uint64_t seed = std::random_device{}();
  std::fprintf(stderr, "svg_timeline_test seed: %llu\n",
               static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> start(0, 50), length(0.2, 6);
  std::uniform_int_distribution<int> who(0, 4);
  for (int round = 0; round < 20; ++round) {
    std::vector<TimelineSegment> segments;
    const int n = 1 + static_cast<int>(rng() % 15);
    for (int i = 0; i < n; ++i) {
      // Times on a 0.01 s grid, so the grid count below is exact.
      const double s = std::round(start(rng) * 100) / 100;
      const double e = s + std::round(length(rng) * 100) / 100;
      segments.push_back({s, e, "S" + std::to_string(who(rng))});
    }
    const std::vector<TimelineSegment> overlaps = OverlapRegions(segments);
    for (int k = 0; k < 5700; ++k) {
      const double t = (k + 0.5) / 100;
      int active = 0;
      for (const auto& s : segments) active += s.start_s <= t && t < s.end_s;
      bool in_overlap = false;
      for (const auto& o : overlaps)
        in_overlap |= o.start_s <= t && t < o.end_s;
      ASSERT_EQ(in_overlap, active >= 2) << "t=" << t << " seed " << seed;
    }
    const std::string svg = SvgTimeline(segments, 40.0, "random");
    double end = 40.0;
    for (const auto& s : segments) end = std::max(end, s.end_s);
    const TimelineGeometry g;
    const double plot = g.width - g.label_width - g.right_margin;
    size_t drawn = 0;
    for (const Rect& r : Rects(svg)) {
      if (r.cls != "speech") continue;
      ASSERT_LT(drawn, segments.size());
      const TimelineSegment& s = segments[drawn++];
      EXPECT_EQ(r.speaker, s.speaker);
      EXPECT_NEAR(r.x, g.label_width + s.start_s / end * plot, 0.01);
    }
    EXPECT_EQ(drawn, segments.size());
  }
}

}  // namespace
}  // namespace diarization::client
