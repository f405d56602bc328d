// The token file (--auth_tokens): who may call what, with which limits.
//
//   {
//     "tokens": [
//       {"name": "batch-transcription",
//        "sha256": "<64 hex digits: SHA-256 of the token>",
//        "methods": ["Diarize", "DiarizeFile", "GetInfo"],
//        "limits": {"max_concurrent_calls": 8, "max_backlog_share": 0.5}},
//       {"name": "prometheus", "token": "<the token itself>",
//        "methods": ["metrics"]}
//     ]
//   }
//
// Each entry has a unique "name" ([A-Za-z0-9._-], 1-64 characters; it is
// logged), exactly one of "sha256" (preferred: the file then holds no
// secret) or "token" (at least 16 characters), a non-empty "methods" list
// of Diarize, DiarizeFile, GetInfo, ServerReflectionInfo, metrics or "*"
// (all of them), and optional "limits" (principal.h). Unknown keys, a
// duplicate name or token are errors: a typo must not silently widen or
// narrow access. Health (grpc.health.v1) needs no token.
#ifndef DIARIZATION_SERVER_AUTH_TOKEN_FILE_H_
#define DIARIZATION_SERVER_AUTH_TOKEN_FILE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/auth/principal.h"

namespace diarization::server::auth {

using TokenHash = std::array<uint8_t, 32>;

// SHA-256 of `token`.
TokenHash HashToken(std::string_view token);

struct TokenEntry {
  TokenHash sha256{};
  std::shared_ptr<const Principal> principal;
};

struct TokenTable {
  std::vector<TokenEntry> entries;
};

// INVALID_ARGUMENT naming the entry and the field at fault.
absl::StatusOr<TokenTable> ParseTokenFile(std::string_view json_text);

}  // namespace diarization::server::auth

#endif  // DIARIZATION_SERVER_AUTH_TOKEN_FILE_H_
