#include "server/status_util.h"

#include "gtest/gtest.h"

namespace diarization::server {
namespace {

TEST(StatusUtil, ApiCodesKeepCodeAndMessage) {
  const struct {
    absl::Status in;
    grpc::StatusCode want;
  } cases[] = {
      {absl::InvalidArgumentError("bad rate"), grpc::INVALID_ARGUMENT},
      {absl::ResourceExhaustedError("queue full"), grpc::RESOURCE_EXHAUSTED},
      {absl::DeadlineExceededError("late"), grpc::DEADLINE_EXCEEDED},
      {absl::CancelledError("gone"), grpc::CANCELLED},
      {absl::UnavailableError("draining"), grpc::UNAVAILABLE},
      {absl::InternalError("bug"), grpc::INTERNAL},
      {absl::UnimplementedError("no"), grpc::UNIMPLEMENTED},
  };
  for (const auto& c : cases) {
    grpc::Status g = ToGrpcStatus(c.in);
    EXPECT_EQ(g.error_code(), c.want) << c.in;
    EXPECT_EQ(g.error_message(), std::string(c.in.message()));
  }
}

TEST(StatusUtil, OkIsOk) { EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok()); }

TEST(StatusUtil, NonApiCodesBecomeInternalNamingTheOriginal) {
  grpc::Status g = ToGrpcStatus(absl::NotFoundError("no such model"));
  EXPECT_EQ(g.error_code(), grpc::INTERNAL);
  EXPECT_NE(g.error_message().find("NOT_FOUND"), std::string::npos)
      << g.error_message();
  EXPECT_NE(g.error_message().find("no such model"), std::string::npos);
  EXPECT_EQ(ToGrpcStatus(absl::DataLossError("x")).error_code(),
            grpc::INTERNAL);
  EXPECT_EQ(ToGrpcStatus(absl::FailedPreconditionError("x")).error_code(),
            grpc::INTERNAL);
}

TEST(StatusUtil, MarkedApiStatusesKeepTheirCode) {
  const grpc::Status g = ToGrpcStatus(
      AsApiStatus(absl::FailedPreconditionError("too little speech")));
  EXPECT_EQ(g.error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_EQ(g.error_message(), "too little speech");
  EXPECT_TRUE(AsApiStatus(absl::OkStatus()).ok());
}

TEST(StatusUtil, CodeNames) {
  EXPECT_EQ(GrpcCodeName(grpc::RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(GrpcCodeName(grpc::OK), "OK");
  EXPECT_EQ(GrpcCodeName(grpc::UNAVAILABLE), "UNAVAILABLE");
}

}  // namespace
}  // namespace diarization::server
