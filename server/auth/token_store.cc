#include "server/auth/token_store.h"

#include <openssl/crypto.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/request_log.h"

namespace diarization::server::auth {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the token file --auth_tokens=", path));
  }
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenStore>> TokenStore::Open(
    std::string path, absl::Duration refresh) {
  std::unique_ptr<TokenStore> store(new TokenStore());
  store->path_ = std::move(path);
  absl::StatusOr<std::string> bytes = ReadFile(store->path_);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<TokenTable> table = ParseTokenFile(*bytes);
  if (!table.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--auth_tokens=", store->path_, ": ", table.status().message()));
  }
  {
    absl::MutexLock lock(&store->mu_);
    store->table_ = std::make_shared<const TokenTable>(*std::move(table));
    store->file_bytes_ = *std::move(bytes);
  }
  if (refresh > absl::ZeroDuration()) {
    TokenStore* self = store.get();
    store->watcher_ = std::thread([self, refresh] { self->Watch(refresh); });
  }
  return store;
}

std::unique_ptr<TokenStore> TokenStore::FromTable(TokenTable table) {
  std::unique_ptr<TokenStore> store(new TokenStore());
  absl::MutexLock lock(&store->mu_);
  store->table_ = std::make_shared<const TokenTable>(std::move(table));
  return store;
}

TokenStore::~TokenStore() {
  stop_.Notify();
  if (watcher_.joinable()) watcher_.join();
}

std::shared_ptr<const Principal> TokenStore::Find(
    std::string_view token) const {
  const TokenHash hash = HashToken(token);
  std::shared_ptr<const TokenTable> table;
  {
    absl::MutexLock lock(&mu_);
    table = table_;
  }
  // Every entry is compared (no early exit).
  std::shared_ptr<const Principal> found;
  for (const TokenEntry& e : table->entries) {
    if (CRYPTO_memcmp(e.sha256.data(), hash.data(), hash.size()) == 0) {
      found = e.principal;
    }
  }
  return found;
}

absl::Status TokenStore::Reload() {
  if (path_.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> bytes = ReadFile(path_);
  if (!bytes.ok()) return bytes.status();
  {
    absl::MutexLock lock(&mu_);
    if (*bytes == file_bytes_) return absl::OkStatus();
  }
  absl::StatusOr<TokenTable> table = ParseTokenFile(*bytes);
  if (!table.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth_tokens=", path_, ": ", table.status().message(),
                     "; the previous tokens stay in force"));
  }
  const size_t n = table->entries.size();
  {
    absl::MutexLock lock(&mu_);
    table_ = std::make_shared<const TokenTable>(*std::move(table));
    file_bytes_ = *std::move(bytes);
  }
  LogEvent("auth_tokens_reloaded", absl::StrCat(n, " tokens from ", path_));
  return absl::OkStatus();
}

int TokenStore::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(table_->entries.size());
}

void TokenStore::Watch(absl::Duration refresh) {
  // Log a failing file once per distinct error, not on every poll.
  std::string last_error;
  while (!stop_.WaitForNotificationWithTimeout(refresh)) {
    const absl::Status s = Reload();
    if (!s.ok() && std::string(s.message()) != last_error) {
      last_error = std::string(s.message());
      LogEvent("auth_tokens_reload_failed", last_error);
    } else if (s.ok()) {
      last_error.clear();
    }
  }
}

}  // namespace diarization::server::auth
