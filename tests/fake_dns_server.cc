#include "tests/fake_dns_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace diarization::testing {

namespace {

constexpr uint16_t kTypeA = 1;
constexpr uint16_t kClassIn = 1;

uint16_t Read16(const std::string& s, size_t at) {
  return static_cast<uint16_t>((static_cast<uint8_t>(s[at]) << 8) |
                               static_cast<uint8_t>(s[at + 1]));
}

void Append16(std::string& s, uint16_t v) {
  s.push_back(static_cast<char>(v >> 8));
  s.push_back(static_cast<char>(v & 0xff));
}

}  // namespace

absl::StatusOr<std::unique_ptr<FakeDnsServer>> FakeDnsServer::Start(
    const std::string& name) {
  std::unique_ptr<FakeDnsServer> s(new FakeDnsServer());
  s->name_ = absl::AsciiStrToLower(name);
  s->fd_ = socket(AF_INET, SOCK_DGRAM, 0);
  if (s->fd_ < 0) return absl::InternalError("socket(AF_INET, SOCK_DGRAM)");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(s->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::InternalError("bind 127.0.0.1:0 (UDP) failed");
  }
  socklen_t len = sizeof(addr);
  getsockname(s->fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  s->port_ = ntohs(addr.sin_port);
  s->thread_ = std::thread([p = s.get()] { p->Serve(); });
  return s;
}

FakeDnsServer::~FakeDnsServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
}

void FakeDnsServer::SetAddresses(const std::vector<std::string>& ipv4) {
  std::vector<uint32_t> parsed;
  for (const std::string& a : ipv4) {
    in_addr v{};
    if (inet_pton(AF_INET, a.c_str(), &v) == 1) parsed.push_back(v.s_addr);
  }
  absl::MutexLock lock(&mu_);
  addresses_ = std::move(parsed);
}

void FakeDnsServer::Serve() {
  char buffer[1500];
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    sockaddr_in from{};
    socklen_t from_len = sizeof(from);
    const ssize_t n = recvfrom(fd_, buffer, sizeof(buffer), 0,
                               reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n <= 0) continue;
    const std::string reply = Answer(std::string(buffer, n));
    if (reply.empty()) continue;
    sendto(fd_, reply.data(), reply.size(), 0,
           reinterpret_cast<sockaddr*>(&from), from_len);
  }
}

std::string FakeDnsServer::Answer(const std::string& query) {
  // Header (12 bytes), then one question: labels, type, class.
  if (query.size() < 12 || Read16(query, 4) != 1) return "";
  size_t at = 12;
  std::string qname;
  while (at < query.size() && query[at] != 0) {
    const size_t label = static_cast<uint8_t>(query[at]);
    if (label > 63 || at + 1 + label > query.size()) return "";
    if (!qname.empty()) qname += '.';
    qname += query.substr(at + 1, label);
    at += 1 + label;
  }
  if (at + 5 > query.size()) return "";
  const size_t question_end = at + 5;  // the root label, type, class
  const uint16_t qtype = Read16(query, at + 1);
  const bool ours = absl::AsciiStrToLower(qname) == name_;

  std::vector<uint32_t> answers;
  if (ours && qtype == kTypeA) {
    ++a_queries_;
    absl::MutexLock lock(&mu_);
    answers = addresses_;
  }
  std::string reply = query.substr(0, 2);  // id
  // QR, opcode 0, AA, RD copied; RA; rcode 0 or 3 (NXDOMAIN).
  const uint8_t rd = static_cast<uint8_t>(query[2]) & 0x01;
  reply.push_back(static_cast<char>(0x84 | rd));
  reply.push_back(static_cast<char>(0x80 | (ours ? 0 : 3)));
  Append16(reply, 1);  // questions
  Append16(reply, static_cast<uint16_t>(answers.size()));
  Append16(reply, 0);  // authority
  Append16(reply, 0);  // additional
  reply += query.substr(12, question_end - 12);
  for (uint32_t address : answers) {
    Append16(reply, 0xC00C);  // the name: a pointer to the question's
    Append16(reply, kTypeA);
    Append16(reply, kClassIn);
    Append16(reply, 0);  // TTL (32 bits): 0, never cache
    Append16(reply, 0);
    Append16(reply, 4);
    reply.append(reinterpret_cast<const char*>(&address), 4);
  }
  return reply;
}

}  // namespace diarization::testing
