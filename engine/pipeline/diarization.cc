#include "engine/pipeline/diarization.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/openblas_threads.h"
#include "engine/common/status_macros.h"
#include "engine/pipeline/segments.h"

namespace diarization::pipeline {

absl::StatusOr<DiarizationDetails> DiarizeDetailed(
    std::span<const float> segmentations, std::span<const float> embeddings,
    int num_windows, const PldaModel& plda, const PipelineConfig& config,
    const SpeakerHints& hints, const std::string& uri, const AhcOptions& ahc,
    const SegmentationSummary* summary) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  constexpr int S = kLocalSpeakers;
  constexpr int D = kEmbeddingDim;
  // The segmentation's checks and summary (count, inactive and clean pairs)
  // unless the caller made them while the embeddings ran.
  SegmentationSummary own;
  if (summary == nullptr) {
    ASSIGN_OR_RETURN(own,
                     SummarizeSegmentation(segmentations, num_windows, config));
    summary = &own;
  } else {
    RETURN_IF_ERROR(CheckSummaryShape(*summary, num_windows));
  }
  const size_t want_emb = static_cast<size_t>(num_windows) * S * D;
  if (embeddings.size() != want_emb) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embeddings have ", embeddings.size(), " values, expected ",
        num_windows, " x ", S, " x ", D, " = ", want_emb));
  }
  if (plda.phi.size() != static_cast<size_t>(plda.lda_dim) ||
      plda.lda_dim == 0) {
    return absl::FailedPreconditionError("PLDA model is not loaded");
  }
  ASSIGN_OR_RETURN(const ResolvedHints resolved, ResolveHints(hints));

  DiarizationDetails details;
  details.grid = summary->grid;
  details.count = summary->count;
  details.count_s = since(start);
  const uint8_t max_count =
      details.count.empty()
          ? 0
          : *std::max_element(details.count.begin(), details.count.end());
  if (max_count == 0) return details;  // nobody speaks: empty annotations

  ClusteringOptions options;
  options.threshold = config.ahc_threshold;
  options.vbx.fa = config.vbx_fa;
  options.vbx.fb = config.vbx_fb;
  options.vbx.max_iters = config.vbx_max_iters;
  options.ahc = ahc;
  ASSIGN_OR_RETURN(details.clustering,
                   VbxClustering(segmentations, embeddings, num_windows, plda,
                                 resolved, options, summary));
  const auto reconstruction = Clock::now();

  // §8: cap the count, drop inactive speakers.
  std::vector<uint8_t> count = details.count;
  if (resolved.max != 0) {
    for (uint8_t& c : count) c = std::min<int>(c, resolved.max);
  }
  details.hard = details.clustering.hard;
  const std::vector<bool>& inactive = details.clustering.inactive;
  for (size_t i = 0; i < details.hard.size(); ++i) {
    if (inactive[i]) details.hard[i] = -2;
  }

  // The activations are the same for both views; only the count differs.
  // On OpenBLAS's thread count, as the clustering's float64 steps: the
  // result does not depend on it (reconstruction.h).
  const int threads = openblas_get_num_threads();
  const Activations activations = AggregateActivations(
      segmentations, details.hard, count, details.grid, threads);
  // The exclusive view (at most one speaker per frame) needs only the
  // activations: with more than one thread it is made beside the regular
  // one, each view on half of them.
  std::vector<Turn> exclusive_turns;
  auto exclusive_view = [&](int view_threads) {
    std::vector<uint8_t> exclusive_count = count;
    for (uint8_t& c : exclusive_count) c = std::min<uint8_t>(c, 1);
    details.exclusive = TopSpeakers(activations, exclusive_count, view_threads);
    exclusive_turns = Binarize(details.exclusive, config.min_duration_off);
  };
  std::thread beside;
  const int regular_threads = threads > 1 ? (threads + 1) / 2 : 1;
  if (threads > 1) beside = std::thread(exclusive_view, threads / 2);
  details.discrete = TopSpeakers(activations, count, regular_threads);
  const std::vector<Turn> turns =
      Binarize(details.discrete, config.min_duration_off);
  const std::map<int, std::string> labels = SpeakerLabels(turns);
  if (beside.joinable()) {
    beside.join();
  } else {
    exclusive_view(1);
  }

  DiarizationOutput& out = details.output;
  out.segments = ToSegments(turns, labels, uri);
  out.exclusive_segments = ToSegments(exclusive_turns, labels, uri);
  // Labels in order with their centroid rows (zero rows for speakers that
  // only exist because the count exceeded the number of clusters).
  std::vector<std::pair<std::string, int>> by_label;
  for (const auto& [column, label] : labels)
    by_label.push_back({label, column});
  std::sort(by_label.begin(), by_label.end());
  const ClusteringResult& cl = details.clustering;
  for (const auto& [label, column] : by_label) {
    out.labels.push_back(label);
    std::vector<float> centroid(D, 0.0f);
    if (column < cl.num_clusters) {
      for (int t = 0; t < D; ++t) {
        centroid[t] = static_cast<float>(
            cl.centroids[static_cast<size_t>(column) * D + t]);
      }
    }
    out.centroids.push_back(std::move(centroid));
  }
  details.reconstruction_s = since(reconstruction);
  return details;
}

absl::StatusOr<DiarizationOutput> Diarize(
    std::span<const float> segmentations, std::span<const float> embeddings,
    int num_windows, const PldaModel& plda, const PipelineConfig& config,
    const SpeakerHints& hints, const AhcOptions& ahc,
    const SegmentationSummary* summary) {
  ASSIGN_OR_RETURN(DiarizationDetails details,
                   DiarizeDetailed(segmentations, embeddings, num_windows, plda,
                                   config, hints, "", ahc, summary));
  return std::move(details.output);
}

}  // namespace diarization::pipeline
