// The host pipeline between and after the networks, as pyannote's
// speaker-diarization-community-1 runs it (../shared/specs/pipeline.md).
//
// Stages in order: ComputeChunks (§2) → [segmentation network] →
// PowersetToMultilabel (§3) → EmbeddingMasks (§5) → [embedding network] →
// Diarize (§4, §6–§12: count, filter, AHC, PLDA, VBx, assignment,
// reconstruction, segments). Deterministic; float64 where pyannote uses it.
#ifndef DIARIZATION_ENGINE_PIPELINE_DIARIZATION_H_
#define DIARIZATION_ENGINE_PIPELINE_DIARIZATION_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/pipeline/rttm.h"

namespace diarization::pipeline {

inline constexpr int kWindowSamples = 160000;
inline constexpr int kFramesPerWindow = 589;
inline constexpr int kLocalSpeakers = 3;
inline constexpr int kEmbeddingDim = 256;

// Defaults are community-1's ("accurate"). Fast() is the API's FAST mode.
struct PipelineConfig {
  int64_t step_samples = 16000;  // 1 s between window starts
  double ahc_threshold = 0.6;
  double vbx_fa = 0.07;
  double vbx_fb = 0.8;
  int vbx_max_iters = 20;
  double min_duration_off = 0.0;
  bool embedding_exclude_overlap = true;

  static PipelineConfig Accurate() { return {}; }
  static PipelineConfig Fast() {
    PipelineConfig c;
    c.step_samples = 32000;
    c.vbx_max_iters = 10;
    return c;
  }
};

// pyannote's num_speakers / min_speakers / max_speakers; 0 = unset.
struct SpeakerHints {
  int num_speakers = 0;
  int min_speakers = 0;
  int max_speakers = 0;
};

// Window layout for N samples (§2): full windows every step, plus one
// zero-padded last window when samples remain.
struct ChunkLayout {
  int64_t num_samples = 0;
  int64_t step_samples = 16000;
  int num_chunks = 0;
  // Start sample of chunk c; the chunk covers [start, start + 160000),
  // zero-padded past num_samples.
  int64_t chunk_start(int c) const { return step_samples * c; }
};
ChunkLayout ComputeChunks(int64_t num_samples, const PipelineConfig& config);

// PLDA parameters (community-1 plda/ folder), float64.
struct PldaModel {
  std::vector<double> mean1;  // (256)
  std::vector<double> mean2;  // (128)
  std::vector<double> lda;    // (256 × 128) row-major
  std::vector<double> mu;     // (128)
  // Eigen-decomposition of the PLDA (generalized eigenproblem of
  // B = (trᵀ diag(1/psi) tr)⁻¹ against W = (trᵀ tr)⁻¹), descending.
  std::vector<double> plda_tr;  // (128 × 128) row-major, row j = eigenvector j
  std::vector<double> phi;      // (128)
  // Where the parameters came from, for GetInfo.
  std::string sha256;
};

// Loads xvec_transform.npz and plda.npz from `dir` and runs pyannote's
// vbx_setup (Eigen's generalized self-adjoint eigensolver).
absl::StatusOr<PldaModel> LoadPlda(const std::string& dir);

// (§3) Hard powerset → multilabel: log_probs (C × 589 × 7) → (C × 589 × 3).
void PowersetToMultilabel(std::span<const float> log_probs,
                          std::span<float> segmentations);

// (§5) Per (chunk, local speaker) pooling weights for the embedding model,
// (C × 3 × 589): the overlap-free mask when it has > 2 active frames,
// otherwise the plain segmentation column.
std::vector<float> EmbeddingMasks(std::span<const float> segmentations,
                                  int num_chunks,
                                  const PipelineConfig& config);

struct DiarizationOutput {
  // Regular view (overlap allowed), sorted by (start, end, label).
  std::vector<Segment> segments;
  // Exclusive view (at most one speaker at a time).
  std::vector<Segment> exclusive_segments;
  // Output labels in order (SPEAKER_00, ...).
  std::vector<std::string> labels;
  // One 256-d centroid per label (zero for padded speakers).
  std::vector<std::vector<float>> centroids;
};

// (§4, §6–§12) Everything after the networks. segmentations: (C × 589 × 3)
// 0/1; embeddings: (C × 3 × 256). Errors: InvalidArgument for inconsistent
// shapes or contradictory hints.
absl::StatusOr<DiarizationOutput> Diarize(std::span<const float> segmentations,
                                          std::span<const float> embeddings,
                                          int num_chunks,
                                          const PldaModel& plda,
                                          const PipelineConfig& config,
                                          const SpeakerHints& hints);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_DIARIZATION_H_
