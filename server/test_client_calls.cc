#include "server/test_client_calls.h"

#include <thread>

#include "gtest/gtest.h"

namespace diarization::server::testing {

v1::DiarizeRequest ConfigRequest(const v1::DiarizationConfig& config) {
  v1::DiarizeRequest r;
  *r.mutable_config() = config;
  return r;
}

grpc::Status DiarizeFile(v1::Diarization::Stub& stub,
                         const v1::DiarizationConfig& config,
                         const std::string& audio, v1::DiarizeResult* result,
                         grpc::ClientContext* context) {
  grpc::ClientContext local;
  if (context == nullptr) context = &local;
  v1::DiarizeFileRequest request;
  *request.mutable_config() = config;
  request.set_audio(audio);
  return stub.DiarizeFile(context, request, result);
}

StreamOutcome DiarizeStream(v1::Diarization::Stub& stub,
                            const v1::DiarizeRequest& first,
                            const std::string& audio, size_t chunk_bytes,
                            grpc::ClientContext* context) {
  grpc::ClientContext local;
  if (context == nullptr) context = &local;
  auto stream = stub.Diarize(context);
  std::thread writer([&] {
    if (!stream->Write(first)) return;
    for (size_t i = 0; i < audio.size(); i += chunk_bytes) {
      v1::DiarizeRequest r;
      r.set_audio(audio.substr(i, chunk_bytes));
      if (!stream->Write(r)) return;
    }
    stream->WritesDone();
  });
  StreamOutcome out;
  v1::DiarizeResponse response;
  while (stream->Read(&response)) {
    if (response.has_partial()) out.partials.push_back(response.partial());
    if (response.has_final()) {
      EXPECT_FALSE(out.final_result.has_value()) << "two final results";
      out.final_result = response.final();
    }
  }
  writer.join();
  out.status = stream->Finish();
  return out;
}

}  // namespace diarization::server::testing
