// A hostile HTTP/2 client for the transport attack tests, framed by hand:
// the attacks need frames a well-behaved library will not send (a receive
// window kept at 0, a header list past the peer's limit in endless
// CONTINUATION frames, streams opened and reset as fast as the socket
// takes them), so this writes the bytes of RFC 9113 itself: the preface,
// SETTINGS, HEADERS (HPACK literals without indexing or Huffman),
// CONTINUATION, DATA, RST_STREAM and PING acknowledgements. A reader thread
// answers PINGs and SETTINGS and records GOAWAY, RST_STREAM and the end of
// the connection; it never sends WINDOW_UPDATE unless asked.
#ifndef DIARIZATION_TESTS_RAW_HTTP2_H_
#define DIARIZATION_TESTS_RAW_HTTP2_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace diarization::testing {

class RawHttp2Connection {
 public:
  // Connects to host:port from `source_ip` (empty: any) and sends the
  // preface and SETTINGS with INITIAL_WINDOW_SIZE = `initial_window`.
  static absl::StatusOr<std::unique_ptr<RawHttp2Connection>> Connect(
      const std::string& host, int port, uint32_t initial_window,
      const std::string& source_ip = "");
  ~RawHttp2Connection();

  // HEADERS (END_HEADERS) for a gRPC call to `path` on a new stream; its id.
  int StartCall(const std::string& path);
  // One gRPC message (5-byte prefix + `message`) as DATA.
  bool SendMessage(int stream, const std::string& message, bool end_stream);
  bool Reset(int stream);
  // A HEADERS frame without END_HEADERS, then CONTINUATION frames of
  // `frame_bytes` each, `total_bytes` of one header value in all (never
  // ending the header block). Returns the bytes the socket took before
  // the peer closed the connection (or all of them).
  size_t SendEndlessHeader(int stream, size_t frame_bytes, size_t total_bytes);
  // Stream and connection window updates.
  bool WindowUpdate(int stream, uint32_t increment);

  bool goaway() const { return goaway_.load(); }
  bool closed() const { return closed_.load(); }
  int resets_received() const { return resets_.load(); }
  // DATA bytes received.
  int64_t data_bytes() const { return data_bytes_.load(); }
  int fd() const { return fd_; }

 private:
  RawHttp2Connection() = default;
  bool Write(const std::string& bytes);
  void ReadLoop();

  int fd_ = -1;
  int next_stream_ = 1;
  std::atomic<bool> goaway_{false};
  std::atomic<bool> closed_{false};
  std::atomic<int> resets_{0};
  std::atomic<int64_t> data_bytes_{0};
  std::mutex write_mu_;
  std::thread reader_;
};

// HTTP/2 frame bytes (type, flags, stream, payload).
std::string Http2Frame(uint8_t type, uint8_t flags, uint32_t stream,
                       const std::string& payload);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTS_RAW_HTTP2_H_
