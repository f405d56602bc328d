// The diarization.v1.Diarization service on gRPC's callback API: each
// method creates its reactor (diarize_reactor.h, diarize_file_reactor.h) or,
// for GetInfo, answers at once.
#ifndef DIARIZATION_SERVER_DIARIZATION_SERVICE_H_
#define DIARIZATION_SERVER_DIARIZATION_SERVICE_H_

#include "diarization/v1/diarization.grpc.pb.h"
#include "server/service_state.h"

namespace diarization::server {

class DiarizationService final : public v1::Diarization::CallbackService {
 public:
  explicit DiarizationService(ServiceState& state) : state_(state) {}

  grpc::ServerBidiReactor<v1::DiarizeRequest, v1::DiarizeResponse>* Diarize(
      grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* DiarizeFile(grpc::CallbackServerContext* context,
                                        const v1::DiarizeFileRequest* request,
                                        v1::DiarizeResult* response) override;

  grpc::ServerUnaryReactor* CreateVoiceprint(
      grpc::CallbackServerContext* context,
      const v1::CreateVoiceprintRequest* request,
      v1::Voiceprint* response) override;

  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const v1::GetInfoRequest* request,
                                    v1::ServerInfo* response) override;

 private:
  ServiceState& state_;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_DIARIZATION_SERVICE_H_
