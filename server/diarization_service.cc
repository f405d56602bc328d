#include "server/diarization_service.h"

#include "absl/time/clock.h"
#include "server/call_context.h"
#include "server/diarize_file_reactor.h"
#include "server/diarize_reactor.h"
#include "server/get_info.h"

namespace diarization::server {

grpc::ServerBidiReactor<v1::DiarizeRequest, v1::DiarizeResponse>*
DiarizationService::Diarize(grpc::CallbackServerContext* context) {
  return DiarizeReactor::Start(state_, context);
}

grpc::ServerUnaryReactor* DiarizationService::DiarizeFile(
    grpc::CallbackServerContext* context, const v1::DiarizeFileRequest* request,
    v1::DiarizeResult* response) {
  return DiarizeFileReactor::Start(state_, context, request, response);
}

grpc::ServerUnaryReactor* DiarizationService::CreateVoiceprint(
    grpc::CallbackServerContext* context,
    const v1::CreateVoiceprintRequest* request, v1::Voiceprint* response) {
  return DiarizeFileReactor::StartVoiceprint(state_, context, request,
                                             response);
}

grpc::ServerUnaryReactor* DiarizationService::GetInfo(
    grpc::CallbackServerContext* context, const v1::GetInfoRequest* /*request*/,
    v1::ServerInfo* response) {
  const absl::Time start = absl::Now();
  FillServerInfo(state_, response);
  RequestLogEntry entry;
  entry.method = "GetInfo";
  entry.peer = context->peer();
  entry.wall_s = absl::ToDoubleSeconds(absl::Now() - start);
  RecordCall(state_, std::move(entry));
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace diarization::server
