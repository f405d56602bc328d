// The service's version, reported by GetInfo and diarization_build_info.
#ifndef DIARIZATION_SERVER_VERSION_H_
#define DIARIZATION_SERVER_VERSION_H_

namespace diarization::server {

inline constexpr char kVersion[] = "0.1.0";

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_VERSION_H_
