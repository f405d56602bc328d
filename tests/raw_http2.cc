#include "tests/raw_http2.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace diarization::testing {
namespace {

constexpr uint8_t kData = 0, kHeaders = 1, kRstStream = 3, kSettings = 4,
                  kPing = 6, kGoaway = 7, kWindowUpdate = 8, kContinuation = 9;
constexpr uint8_t kEndStream = 1, kEndHeaders = 4, kAck = 1;

std::string Be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
}

// HPACK integer with an N-bit prefix (RFC 7541 5.1), first byte's high
// bits `high`.
std::string HpackInt(uint64_t v, int prefix_bits, uint8_t high) {
  const uint64_t max = (1u << prefix_bits) - 1;
  std::string out;
  if (v < max) {
    out.push_back(static_cast<char>(high | v));
    return out;
  }
  out.push_back(static_cast<char>(high | max));
  v -= max;
  while (v >= 128) {
    out.push_back(static_cast<char>((v & 127) | 128));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

// Literal header field without indexing, new name (RFC 7541 6.2.2).
std::string Literal(const std::string& name, const std::string& value) {
  return absl::StrCat(std::string(1, '\0'), HpackInt(name.size(), 7, 0), name,
                      HpackInt(value.size(), 7, 0), value);
}

}  // namespace

std::string Http2Frame(uint8_t type, uint8_t flags, uint32_t stream,
                       const std::string& payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  std::string f{static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                static_cast<char>(n), static_cast<char>(type),
                static_cast<char>(flags)};
  f += Be32(stream & 0x7fffffff);
  f += payload;
  return f;
}

absl::StatusOr<std::unique_ptr<RawHttp2Connection>> RawHttp2Connection::Connect(
    const std::string& host, int port, uint32_t initial_window,
    const std::string& source_ip) {
  std::unique_ptr<RawHttp2Connection> c(new RawHttp2Connection());
  c->fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->fd_ < 0) {
    return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  }
  if (!source_ip.empty()) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    inet_pton(AF_INET, source_ip.c_str(), &local.sin_addr);
    if (bind(c->fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
      return absl::InternalError(
          absl::StrCat("bind ", source_ip, ": ", std::strerror(errno)));
    }
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  if (connect(c->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::UnavailableError(
        absl::StrCat("connect: ", std::strerror(errno)));
  }
  const int one = 1;
  setsockopt(c->fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // A write the server does not take within 2 s fails (tests stay bounded).
  const timeval send_timeout{.tv_sec = 2, .tv_usec = 0};
  setsockopt(c->fd_, SOL_SOCKET, SO_SNDTIMEO, &send_timeout,
             sizeof(send_timeout));
  // SETTINGS: ENABLE_PUSH 0, INITIAL_WINDOW_SIZE.
  std::string settings;
  settings += std::string{0, 2} + Be32(0);
  settings += std::string{0, 4} + Be32(initial_window);
  if (!c->Write(absl::StrCat("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
                             Http2Frame(kSettings, 0, 0, settings)))) {
    return absl::UnavailableError("the server closed during the preface");
  }
  RawHttp2Connection* self = c.get();
  c->reader_ = std::thread([self] { self->ReadLoop(); });
  return c;
}

RawHttp2Connection::~RawHttp2Connection() {
  if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
  if (reader_.joinable()) reader_.join();
  if (fd_ >= 0) close(fd_);
}

bool RawHttp2Connection::Write(const std::string& bytes) {
  std::lock_guard<std::mutex> lock(write_mu_);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

int RawHttp2Connection::StartCall(const std::string& path) {
  const int id = next_stream_;
  next_stream_ += 2;
  const std::string block = absl::StrCat(
      Literal(":method", "POST"), Literal(":scheme", "http"),
      Literal(":path", path), Literal(":authority", "localhost"),
      Literal("content-type", "application/grpc"), Literal("te", "trailers"));
  Write(Http2Frame(kHeaders, kEndHeaders, id, block));
  return id;
}

bool RawHttp2Connection::SendMessage(int stream, const std::string& message,
                                     bool end_stream) {
  std::string payload(1, '\0');
  payload += Be32(static_cast<uint32_t>(message.size()));
  payload += message;
  // Frames of at most 16 KiB (the default SETTINGS_MAX_FRAME_SIZE).
  size_t at = 0;
  while (true) {
    const size_t n = std::min<size_t>(16384, payload.size() - at);
    const bool last = at + n == payload.size();
    if (!Write(Http2Frame(kData, last && end_stream ? kEndStream : 0, stream,
                          payload.substr(at, n)))) {
      return false;
    }
    at += n;
    if (last) return true;
  }
}

bool RawHttp2Connection::Reset(int stream) {
  return Write(Http2Frame(kRstStream, 0, stream, Be32(8)));  // CANCEL
}

bool RawHttp2Connection::WindowUpdate(int stream, uint32_t increment) {
  return Write(Http2Frame(kWindowUpdate, 0, stream, Be32(increment)));
}

size_t RawHttp2Connection::SendEndlessHeader(int stream, size_t frame_bytes,
                                             size_t total_bytes) {
  // A valid start: the pseudo-headers, then one literal whose value is
  // `total_bytes` long and never completes.
  std::string first = absl::StrCat(
      Literal(":method", "POST"), Literal(":scheme", "http"),
      Literal(":path", "/diarization.v1.Diarization/GetInfo"),
      Literal(":authority", "localhost"),
      Literal("content-type", "application/grpc"), std::string(1, '\0'),
      HpackInt(3, 7, 0), "x-a", HpackInt(total_bytes, 7, 0));
  if (!Write(Http2Frame(kHeaders, 0, stream, first))) return 0;
  size_t sent = first.size();
  const std::string frame =
      Http2Frame(kContinuation, 0, stream, std::string(frame_bytes, 'a'));
  while (sent < total_bytes) {
    if (closed_.load() || goaway_.load()) break;
    if (!Write(frame)) break;
    sent += frame.size();
  }
  return sent;
}

void RawHttp2Connection::ReadLoop() {
  std::string buffer;
  char data[65536];
  while (true) {
    const ssize_t n = recv(fd_, data, sizeof(data), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(data, static_cast<size_t>(n));
    while (buffer.size() >= 9) {
      const uint32_t len = (static_cast<uint8_t>(buffer[0]) << 16) |
                           (static_cast<uint8_t>(buffer[1]) << 8) |
                           static_cast<uint8_t>(buffer[2]);
      if (buffer.size() < 9 + len) break;
      const uint8_t type = static_cast<uint8_t>(buffer[3]);
      const uint8_t flags = static_cast<uint8_t>(buffer[4]);
      const std::string payload = buffer.substr(9, len);
      buffer.erase(0, 9 + len);
      if (type == kSettings && !(flags & kAck)) {
        Write(Http2Frame(kSettings, kAck, 0, ""));
      } else if (type == kPing && !(flags & kAck)) {
        Write(Http2Frame(kPing, kAck, 0, payload));
      } else if (type == kGoaway) {
        goaway_ = true;
      } else if (type == kRstStream) {
        ++resets_;
      } else if (type == kData) {
        data_bytes_ += len;
      }
    }
  }
  closed_ = true;
}

}  // namespace diarization::testing
