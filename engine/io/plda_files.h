// Reads the PLDA folder of a model directory (community-1 `plda/`):
// xvec_transform.npz {mean1 (in), mean2 (out), lda (in × out)}, plda.npz
// {mu (out), tr (out × out), psi (out)} and, when present,
// eigenvectors_desc.bin (pyannote's own LAPACK eigenvectors, out × out
// float64, column j = eigenvector j) that fixes each eigenvector's sign.
// The arrays go to pipeline::BuildPlda, which does the math: the host
// pipeline takes arrays, the files are read here.
#ifndef DIARIZATION_ENGINE_IO_PLDA_FILES_H_
#define DIARIZATION_ENGINE_IO_PLDA_FILES_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/pipeline/plda.h"

namespace diarization::io {

// Loads the files of `dir` and runs pyannote's vbx_setup (BuildPlda).
// NotFound names a missing file; InvalidArgument names a missing member or a
// wrong shape. The model's sha256 is the SHA-256 of xvec_transform.npz's
// bytes followed by plda.npz's.
absl::StatusOr<pipeline::PldaModel> LoadPlda(const std::string& dir);

}  // namespace diarization::io

#endif  // DIARIZATION_ENGINE_IO_PLDA_FILES_H_
