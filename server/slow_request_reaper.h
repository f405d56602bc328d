// Closes HTTP connections that take too long to send a request (issue 39,
// finding 3: slowloris on the metrics port).
//
// libmicrohttpd's MHD_OPTION_CONNECTION_TIMEOUT fires only when a
// connection is idle, so a client that trickles its request one byte at a
// time keeps its connection (and a place under the connection limits) for
// ever; the library has no whole-request timeout. The endpoint reports each
// connection's life here (libmicrohttpd's connection and completion
// notifications); a thread shuts down, with shutdown(2), every connection
// that has spent longer than `limit` without a complete request header,
// since it opened or since its previous response. libmicrohttpd then sees
// the end of the stream and closes it. Closed() must come before the
// descriptor is closed (libmicrohttpd notifies first), so a shutdown never
// reaches a reused descriptor.
#ifndef DIARIZATION_SERVER_SLOW_REQUEST_REAPER_H_
#define DIARIZATION_SERVER_SLOW_REQUEST_REAPER_H_

#include <atomic>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace diarization::server {

class SlowRequestReaper {
 public:
  // Starts its thread.
  explicit SlowRequestReaper(absl::Duration limit);
  ~SlowRequestReaper();
  SlowRequestReaper(const SlowRequestReaper&) = delete;
  SlowRequestReaper& operator=(const SlowRequestReaper&) = delete;

  // `key` identifies the connection (libmicrohttpd's connection pointer).
  void Opened(const void* key, int fd);
  void RequestStarted(const void* key);
  void RequestDone(const void* key);
  void Closed(const void* key);
  // Connections shut down so far.
  int reaped() const { return reaped_.load(); }

 private:
  struct Connection {
    int fd = -1;
    bool in_request = false;
    absl::Time waiting_since;
    bool reaped = false;
  };
  void Loop();

  const absl::Duration limit_;
  absl::Mutex mu_;
  absl::flat_hash_map<const void*, Connection> connections_
      ABSL_GUARDED_BY(mu_);
  std::atomic<int> reaped_{0};
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_SLOW_REQUEST_REAPER_H_
