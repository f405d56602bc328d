// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status and absl::StatusOr.
//
// Abseil ships no public version of these macros (abseil.io/guides/status);
// every module of the project uses this one definition.
#ifndef DIARIZATION_ENGINE_COMMON_STATUS_MACROS_H_
#define DIARIZATION_ENGINE_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define DIARIZATION_STATUS_CONCAT_INNER(a, b) a##b
#define DIARIZATION_STATUS_CONCAT(a, b) DIARIZATION_STATUS_CONCAT_INNER(a, b)

// Evaluates `expr` (an absl::Status); returns it from the caller if not OK.
#define RETURN_IF_ERROR(expr)                   \
  do {                                          \
    ::absl::Status _status_or_error = (expr);   \
    if (!_status_or_error.ok()) {               \
      return _status_or_error;                  \
    }                                           \
  } while (0)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status from
// the caller, otherwise move-assigns the value to `lhs` (which may be a
// declaration such as `auto x`).
#define ASSIGN_OR_RETURN(lhs, rexpr)                                        \
  ASSIGN_OR_RETURN_IMPL(DIARIZATION_STATUS_CONCAT(_status_or_, __LINE__), \
                        lhs, rexpr)

#define ASSIGN_OR_RETURN_IMPL(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                          \
  if (!statusor.ok()) {                             \
    return std::move(statusor).status();            \
  }                                                 \
  lhs = std::move(statusor).value()

#endif  // DIARIZATION_ENGINE_COMMON_STATUS_MACROS_H_
