// SHA-256 (lower-case hex) through OpenSSL's libcrypto, already linked for
// TLS: the one implementation. It identifies model files and tensors
// (engine/models manifests) and the PLDA parameters a pipeline was loaded
// with (GetInfo).
#ifndef DIARIZATION_ENGINE_COMMON_SHA256_H_
#define DIARIZATION_ENGINE_COMMON_SHA256_H_

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace diarization {

std::string Sha256Hex(std::string_view data);
std::string Sha256Hex(std::span<const std::byte> bytes);
// NotFound when the file cannot be opened, DataLoss on a read error.
absl::StatusOr<std::string> Sha256HexOfFile(const std::string& path);

}  // namespace diarization

#endif  // DIARIZATION_ENGINE_COMMON_SHA256_H_
