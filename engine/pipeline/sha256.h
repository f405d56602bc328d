// SHA-256 (FIPS 180-4) of a byte string, hex-encoded: identifies the PLDA
// parameters a pipeline was loaded with (GetInfo). Hand-written because no
// Debian library the build already links offers a hash; ~60 lines.
#ifndef DIARIZATION_ENGINE_PIPELINE_SHA256_H_
#define DIARIZATION_ENGINE_PIPELINE_SHA256_H_

#include <string>
#include <string_view>

namespace diarization::pipeline {

std::string Sha256Hex(std::string_view data);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_SHA256_H_
