// Bounded-memory centroid AHC for long inputs (docs/adr/0020-scalable-ahc.md).
//
// pyannote's centroid linkage keeps the n(n-1)/2 float64 distance matrix:
// 10 hours of audio (~50k training embeddings) would need ~10 GB. Here the
// rows are cut into consecutive blocks (time order); each block is clustered
// exactly (ahc.h) and cut at the threshold; the resulting flat clusters
// become weighted points (centroid, member count) that are clustered again
// with the same centroid linkage, recursively, until one level fits a
// block. Centroid linkage of weighted centroids is exactly the distance the
// full algorithm would use between those clusters, so the only difference
// from the exact algorithm is which pairs may merge first across blocks.
// Memory: O(block² + n·d). Precision: float64.
#ifndef DIARIZATION_ENGINE_PIPELINE_AHC_BLOCKWISE_H_
#define DIARIZATION_ENGINE_PIPELINE_AHC_BLOCKWISE_H_

#include <span>
#include <vector>

namespace diarization::pipeline {

// Flat clusters (1-based ids, scipy fcluster style) of the n unit-norm rows
// of `normed` (n × d float32), centroid linkage cut at `threshold`.
std::vector<int> BlockwiseCentroidFcluster(std::span<const float> normed, int n,
                                           int d, double threshold,
                                           int block_size);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_AHC_BLOCKWISE_H_
