#include "kernels/cooperative_token.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

namespace diarization::kernels {

CooperativeLaunchToken& CooperativeLaunchToken::ForDevice(int ordinal) {
  static std::mutex mu;
  static auto* tokens =
      new std::map<int, std::unique_ptr<CooperativeLaunchToken>>;
  std::lock_guard<std::mutex> lock(mu);
  auto& t = (*tokens)[ordinal];
  if (!t) t = std::make_unique<CooperativeLaunchToken>();
  return *t;
}

CooperativeLaunchToken::Hold CooperativeLaunchToken::Acquire() {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t ticket = next_ticket_++;
  const bool contended = ticket != serving_;
  cv_.wait(lock, [&] { return serving_ == ticket; });
  const uint64_t waited = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now() - start)
          .count());
  ++stats_.acquisitions;
  if (contended) {
    ++stats_.contended;
    stats_.wait_ns += waited;
    stats_.max_wait_ns = std::max(stats_.max_wait_ns, waited);
  }
  return Hold(this);
}

void CooperativeLaunchToken::Unlock() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++serving_;
  }
  cv_.notify_all();
}

CooperativeTokenStats CooperativeLaunchToken::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

CooperativeLaunchToken::Hold& CooperativeLaunchToken::Hold::operator=(
    Hold&& o) noexcept {
  if (this != &o) {
    Release();
    token_ = o.token_;
    o.token_ = nullptr;
  }
  return *this;
}

void CooperativeLaunchToken::Hold::Release() {
  if (token_ != nullptr) {
    token_->Unlock();
    token_ = nullptr;
  }
}

}  // namespace diarization::kernels
