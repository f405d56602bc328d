// Ends a call whose response waits unread (issue 39, finding 1).
//
// A client can stop taking responses (keep its HTTP/2 receive window at 0
// and answer pings): the write in flight never completes, every later write
// (the final result, any error status) waits behind it, and the call keeps
// its slot for ever, past max_stream_duration_s. gRPC has no write timeout,
// so each reactor arms this one per write: when a write is not done within
// ServiceLimits::write_timeout_s (or by the call's own end, if sooner), the
// reactor is told (to log why) and the call is cancelled (RST_STREAM; the
// client sees CANCELLED if it ever reads), which completes the write and
// frees the slot.
//
// Thread-safety: WriteStarted/WriteDone/CallDone from the reactor (any
// thread, not concurrently for one call, as its writes are sequential);
// the expiry runs on the server's stream pool. The reactor's reference
// count is held while a timer is pending (`hold`/`release`), so the reactor
// outlives it; the gRPC context is only touched before CallDone (OnDone),
// also when gRPC runs OnDone inline inside the cancel.
#ifndef DIARIZATION_SERVER_RESPONSE_DEADLINE_H_
#define DIARIZATION_SERVER_RESPONSE_DEADLINE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server_context.h"
#include "server/call_timer.h"
#include "server/service_state.h"

namespace diarization::server {

class ResponseDeadline {
 public:
  // `on_expired` runs on the stream pool when a write timed out, before the
  // call is cancelled (the reactor logs and counts the call there).
  ResponseDeadline(ServiceState& state, grpc::CallbackServerContext* context,
                   std::function<void()> hold, std::function<void()> release,
                   std::function<void()> on_expired);

  // A write (a message, or the final message and status) started: it must
  // be done within write_timeout_s and by `call_end`, but never sooner than
  // 1 s from now. Replaces a deadline still armed.
  void WriteStarted(absl::Time call_end);
  // The write completed.
  void WriteDone();
  // From OnDone: nothing is cancelled afterwards; waits for a cancel in
  // progress on another thread.
  void CallDone();
  // The deadline passed and the call was (or is being) cancelled.
  bool expired() const { return expired_.load(); }

 private:
  void Disarm();
  void Expire(uint64_t generation);

  ServiceState& state_;
  grpc::CallbackServerContext* const context_;
  const std::function<void()> hold_;
  const std::function<void()> release_;
  const std::function<void()> on_expired_;
  std::atomic<CallTimer::Id> timer_{0};
  // Which write the pending timer is for; a stale expiry does nothing.
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> expired_{false};

  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  // The thread inside TryCancel, if any (gRPC may run OnDone inline there).
  std::thread::id cancelling_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_RESPONSE_DEADLINE_H_
