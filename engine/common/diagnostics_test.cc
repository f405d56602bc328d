#include "engine/common/diagnostics.h"

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diarization {
namespace {

using ::testing::HasSubstr;

TEST(DiagnosticsTest, WithoutASinkALineGoesToStderr) {
  SetDiagnosticSink(nullptr);
  ::testing::internal::CaptureStderr();
  ReportDiagnostic("cuda:0 segmentation", "LSTM recurrence: cluster kernel");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "cuda:0 segmentation: LSTM recurrence: cluster kernel\n");
}

TEST(DiagnosticsTest, AnInstalledSinkGetsEveryDiagnosticAndStderrNothing) {
  absl::Mutex mu;
  std::vector<std::pair<std::string, std::string>> seen;
  SetDiagnosticSink([&](std::string_view source, std::string_view message) {
    absl::MutexLock lock(&mu);
    seen.emplace_back(std::string(source), std::string(message));
  });
  ::testing::internal::CaptureStderr();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) {
        ReportDiagnostic("engine", "thread " + std::to_string(t));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::string err = ::testing::internal::GetCapturedStderr();
  SetDiagnosticSink(nullptr);
  EXPECT_EQ(err, "");
  ASSERT_EQ(seen.size(), 200u);
  EXPECT_EQ(seen[0].first, "engine");
  EXPECT_THAT(seen[0].second, HasSubstr("thread "));
}

TEST(DiagnosticsTest, AnEmptySinkRestoresStderr) {
  int calls = 0;
  SetDiagnosticSink([&](std::string_view, std::string_view) { ++calls; });
  SetDiagnosticSink(DiagnosticSink());
  ::testing::internal::CaptureStderr();
  ReportDiagnostic("arena", "spilled");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "arena: spilled\n");
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace diarization
