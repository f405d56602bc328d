// GetInfo: version, models, devices, limits and state. Reads only snapshots
// (no compute), so it answers on the gRPC thread.
#ifndef DIARIZATION_SERVER_GET_INFO_H_
#define DIARIZATION_SERVER_GET_INFO_H_

#include "diarization/v1/diarization.pb.h"
#include "server/service_state.h"

namespace diarization::server {

void FillServerInfo(const ServiceState& state, v1::ServerInfo* info);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_GET_INFO_H_
