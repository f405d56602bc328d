#include "engine/pipeline/clustering.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/openblas_threads.h"
#include "engine/pipeline/assignment.h"
#include "engine/pipeline/kmeans.h"

namespace diarization::pipeline {

absl::StatusOr<ResolvedHints> ResolveHints(const SpeakerHints& hints) {
  ResolvedHints r;
  // pyannote: min = num or min or 1; max = num or max or ∞.
  r.min = hints.num_speakers ? hints.num_speakers
                             : (hints.min_speakers ? hints.min_speakers : 1);
  r.max = hints.num_speakers ? hints.num_speakers : hints.max_speakers;
  if (hints.num_speakers < 0 || hints.min_speakers < 0 ||
      hints.max_speakers < 0 || (r.max != 0 && r.min > r.max)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "speaker hints num_speakers=", hints.num_speakers, " min_speakers=",
        hints.min_speakers, " max_speakers=", hints.max_speakers,
        ": each must be 0 (unset) or positive, and min_speakers <= "
        "max_speakers unless num_speakers is set"));
  }
  r.num = hints.num_speakers;
  if (r.max != 0 && r.min == r.max) r.num = r.min;
  return r;
}

absl::StatusOr<ClusteringResult> VbxClustering(
    std::span<const float> segmentations, std::span<const float> embeddings,
    int num_windows, const PldaModel& plda, const ResolvedHints& hints,
    const ClusteringOptions& options, const SegmentationSummary* summary) {
  constexpr int S = kLocalSpeakers;
  constexpr int D = kEmbeddingDim;
  if (plda.input_dim != D) {
    return absl::InvalidArgumentError(
        absl::StrCat("PLDA expects ", plda.input_dim,
                     "-d embeddings, the pipeline has ", D));
  }
  ClusteringResult out;
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  auto t = Clock::now();
  if (summary != nullptr) {
    if (absl::Status shape = CheckSummaryShape(*summary, num_windows);
        !shape.ok()) {
      return shape;
    }
    out.train = KeepFiniteEmbeddings(summary->clean, embeddings);
    out.inactive = summary->inactive;
  } else {
    out.train = FilterTrainEmbeddings(segmentations, embeddings, num_windows);
    out.inactive = InactiveSpeakers(segmentations, num_windows);
  }
  const int n = out.train.size();
  std::vector<float> train(static_cast<size_t>(n) * D);
  for (int i = 0; i < n; ++i) {
    const float* src =
        embeddings.data() + (static_cast<size_t>(out.train.window_idx[i]) * S +
                             out.train.speaker_idx[i]) *
                                D;
    std::copy_n(src, D, train.data() + static_cast<size_t>(i) * D);
  }
  out.times.filter_s = since(t);

  if (n < 2) {
    // pyannote: no clustering below 2 training embeddings; everybody is
    // cluster 0 and the centroid is the mean of what there is (NaN if none).
    out.num_clusters = 1;
    out.hard.assign(static_cast<size_t>(num_windows) * S, 0);
    out.centroids.assign(
        D, n == 0 ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    if (n == 1) {
      for (int t = 0; t < D; ++t) out.centroids[t] = train[t];
    }
    return out;
  }

  AhcOptions ahc = options.ahc;
  ahc.threshold = options.threshold;
  // The PLDA transforms need only the training set: they run while the
  // accelerator links (AhcOptions::beside_linkage), else after the linkage.
  ahc.beside_linkage = [&] {
    const auto start = Clock::now();
    out.xvec = XvecTransform(plda, train, n);
    out.plda_features = PldaTransform(plda, out.xvec, n);
    out.times.plda_s = since(start);
  };
  t = Clock::now();
  out.ahc_labels = AhcCluster(train, n, D, ahc, &out.times.ahc);
  out.times.ahc_s = since(t);
  t = Clock::now();
  out.vbx = ClusterVbx(out.ahc_labels, out.plda_features, plda.lda_dim,
                       plda.phi, options.vbx, options.init_smoothing);
  const int s = static_cast<int>(out.vbx.pi.size());
  int k = 0;
  out.centroids = WeightedCentroids(train, n, D, out.vbx.gamma, s, out.vbx.pi,
                                    options.min_prior, &k);
  out.times.vbx_s = since(t);
  t = Clock::now();

  // Speaker-count override (§7.7).
  int num = hints.num;
  if (k < hints.min) {
    num = hints.min;
  } else if (hints.max != 0 && k > hints.max) {
    num = hints.max;
  }
  if (num != 0 && num != k) {
    if (num > n) {
      // sklearn raises "n_samples should be >= n_clusters" here.
      return absl::InvalidArgumentError(
          absl::StrCat("cannot form ", num, " speaker clusters from the ", n,
                       " embeddings usable for clustering; lower "
                       "num_speakers/min_speakers"));
    }
    out.kmeans = true;
    const std::vector<float> normed = NormalizeRowsF32(train, n, D);
    const std::vector<int> labels = KMeans(normed, n, D, num);
    out.centroids = MeanCentroids(train, n, D, labels, num);
    k = num;
  }
  out.num_clusters = k;

  // The elementwise passes on OpenBLAS's thread count, as its GEMM.
  const int threads = openblas_get_num_threads();
  out.soft =
      SoftClusters(embeddings, num_windows * S, D, out.centroids, k, threads);
  if (!out.kmeans) {
    out.hard =
        ConstrainedArgmax(out.soft, num_windows, k, out.inactive, threads);
  } else {
    out.hard = PlainArgmax(out.soft, num_windows * S, k);
  }
  out.times.assignment_s = since(t);
  return out;
}

}  // namespace diarization::pipeline
