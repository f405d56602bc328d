// SHA-256 (hex) of a byte string, through OpenSSL's libcrypto: identifies
// the PLDA parameters a pipeline was loaded with (GetInfo).
#ifndef DIARIZATION_ENGINE_PIPELINE_SHA256_H_
#define DIARIZATION_ENGINE_PIPELINE_SHA256_H_

#include <string>
#include <string_view>

namespace diarization::pipeline {

std::string Sha256Hex(std::string_view data);

}  // namespace diarization::pipeline

#endif  // DIARIZATION_ENGINE_PIPELINE_SHA256_H_
