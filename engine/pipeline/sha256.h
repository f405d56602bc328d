// SHA-256 of the PLDA parameters (GetInfo): engine/common/sha256.h, named in
// this namespace for the pipeline's callers.
#ifndef DIARIZATION_ENGINE_PIPELINE_SHA256_H_
#define DIARIZATION_ENGINE_PIPELINE_SHA256_H_

#include "engine/common/sha256.h"

namespace diarization::pipeline {

using ::diarization::Sha256Hex;

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_SHA256_H_
