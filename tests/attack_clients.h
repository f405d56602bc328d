// What the attack tests (attack_test, transport_attack_test) share: test
// audio, the paced victim stream and its bound, and looks at the server
// (GetInfo, its log).
#ifndef DIARIZATION_TESTS_ATTACK_CLIENTS_H_
#define DIARIZATION_TESTS_ATTACK_CLIENTS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diarization/v1/diarization.grpc.pb.h"
#include "grpcpp/channel.h"
#include "tests/server_process.h"

namespace diarization::testing {

inline constexpr int kRate = 16000;

// ATTACK_DEVICE: the server's --device (default cpu).
std::string Device();
bool OnGpu();
// ATTACK_VICTIM_BOUND_S: a flat bound for the victim's final result after
// its end, instead of one relative to its latency alone.
std::optional<double> FlatVictimBound();
// The audio's random seed (printed once).
uint64_t Seed();

// 16-bit PCM at 16 kHz: random tones in random turns with a little noise.
std::string Pcm(double seconds, uint64_t salt);
v1::DiarizationConfig RawConfig(const std::string& id);
std::chrono::system_clock::time_point In(double seconds);

// A channel with its own TCP connection.
std::shared_ptr<grpc::Channel> OwnConnection(const ServerProcess& server,
                                             int id);

struct VictimOutcome {
  grpc::Status status;
  std::optional<v1::DiarizeResult> final_result;
  // Seconds from the half-close (the end of the audio) to the final result.
  double final_after_end_s = -1;
};

// The victim: `seconds` of audio at the pace of a live source (100 ms every
// 100 ms) on its own connection.
VictimOutcome PacedStream(const ServerProcess& server, double seconds,
                          const std::string& id);
// The same to another address (a proxy in front of the server).
VictimOutcome PacedStreamTo(const std::string& address, double seconds,
                            const std::string& id);

// The victim's final result within (0.5 + share) × baseline_s + 1 s of its
// end (ATTACK_VICTIM_BOUND_S: a flat bound instead).
void ExpectVictimServed(const VictimOutcome& v, double seconds,
                        const ServerProcess& server, double baseline_s,
                        double share = 1.0);

v1::ServerInfo Info(const ServerProcess& server);
bool WaitFor(const ServerProcess& server,
             const std::function<bool(const v1::ServerInfo&)>& done,
             double timeout_s);
bool Idle(const v1::ServerInfo& info);

// The JSON request-log lines of `method` in the server's log.
std::vector<std::string> LogLines(const ServerProcess& server,
                                  const std::string& method);
// Every line of the log is JSON.
void ExpectOnlyJsonLines(const ServerProcess& server);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTS_ATTACK_CLIENTS_H_
