// GetInfo: version, models, devices, limits and state. Reads only snapshots
// (no compute), so it answers on the gRPC thread.
#ifndef DIARIZATION_SERVER_GET_INFO_H_
#define DIARIZATION_SERVER_GET_INFO_H_

#include <string>

#include "diarization/v1/diarization.pb.h"
#include "server/service_state.h"

namespace diarization::server {

// GetInfo goes to any authorized client, so it names no host paths: an
// absolute path in a model's free-text source (a hand-written manifest may
// hold one) keeps only its last component. (The model files' paths are
// already relative to the model directory.)
std::string WithoutHostPaths(const std::string& text);

void FillServerInfo(const ServiceState& state, v1::ServerInfo* info);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_GET_INFO_H_
