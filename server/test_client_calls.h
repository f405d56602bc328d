// Test-only client calls shared by the in-process service tests
// (server/grpc_server_test.cc) and the real-binary tests (tests/e2e_test.cc):
// one unary DiarizeFile and one whole Diarize stream.
#ifndef DIARIZATION_SERVER_TEST_CLIENT_CALLS_H_
#define DIARIZATION_SERVER_TEST_CLIENT_CALLS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "diarization/v1/diarization.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace diarization::server::testing {

// The config as the first message of a Diarize stream.
v1::DiarizeRequest ConfigRequest(const v1::DiarizationConfig& config);

// DiarizeFile with `config` and `audio`. `context` may carry a deadline or
// metadata; null uses a fresh one.
grpc::Status DiarizeFile(v1::Diarization::Stub& stub,
                         const v1::DiarizationConfig& config,
                         const std::string& audio, v1::DiarizeResult* result,
                         grpc::ClientContext* context = nullptr);

struct StreamOutcome {
  grpc::Status status;
  std::vector<v1::PartialResult> partials;
  std::optional<v1::DiarizeResult> final_result;
};

// Diarize: sends `first`, then `audio` in `chunk_bytes` pieces from a writer
// thread, half-closes, and reads every response until the status. A second
// final result is a test failure.
StreamOutcome DiarizeStream(v1::Diarization::Stub& stub,
                            const v1::DiarizeRequest& first,
                            const std::string& audio, size_t chunk_bytes = 3200,
                            grpc::ClientContext* context = nullptr);

}  // namespace diarization::server::testing

#endif  // DIARIZATION_SERVER_TEST_CLIENT_CALLS_H_
