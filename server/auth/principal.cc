#include "server/auth/principal.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/auth/token_auth.h"
#include "server/auth/token_store.h"

namespace diarization::server::auth {

absl::StatusOr<std::shared_ptr<const Principal>> CallPrincipal(
    const grpc::ServerContextBase& context, const TokenStore& tokens) {
  std::optional<std::string_view> authorization;
  const auto& md = context.client_metadata();
  if (auto it = md.find("authorization"); it != md.end()) {
    authorization = std::string_view(it->second.data(), it->second.size());
  }
  if (!authorization.has_value()) {
    return absl::UnauthenticatedError("no token on the call");
  }
  std::shared_ptr<const Principal> p = tokens.Find(BearerToken(*authorization));
  if (p == nullptr) {
    return absl::UnauthenticatedError("the token is not valid");
  }
  return p;
}

PrincipalCalls::Slot& PrincipalCalls::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    if (owner_ != nullptr) owner_->Release(principal_->name);
    owner_ = other.owner_;
    principal_ = std::move(other.principal_);
    other.owner_ = nullptr;
    other.principal_ = nullptr;
  }
  return *this;
}

PrincipalCalls::Slot::~Slot() {
  if (owner_ != nullptr) owner_->Release(principal_->name);
}

absl::StatusOr<PrincipalCalls::Slot> PrincipalCalls::Admit(
    std::shared_ptr<const Principal> principal) {
  Slot slot;
  if (principal == nullptr) return slot;
  {
    absl::MutexLock lock(&mu_);
    int& open = open_[principal->name];
    const int limit = principal->limits.max_concurrent_calls;
    if (limit > 0 && open >= limit) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the token '", principal->name, "' already has ", open,
          " calls open, its max_concurrent_calls; retry when one ends"));
    }
    ++open;
  }
  slot.owner_ = this;
  slot.principal_ = std::move(principal);
  return slot;
}

int PrincipalCalls::open_calls(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(name);
  return it == open_.end() ? 0 : it->second;
}

void PrincipalCalls::Release(const std::string& name) {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(name);
  if (it == open_.end()) return;
  if (--it->second <= 0) open_.erase(it);
}

}  // namespace diarization::server::auth
