// The current token table, read from the token file and re-read when the
// file changes: a watcher thread compares the file's bytes every `refresh`
// (a Kubernetes Secret volume swaps a symlink, so the path's contents are
// what counts, not an inotify event on it). A file that no longer parses
// keeps the previous table and logs why: a bad edit never locks everyone
// out or lets everyone in.
#ifndef DIARIZATION_SERVER_AUTH_TOKEN_STORE_H_
#define DIARIZATION_SERVER_AUTH_TOKEN_STORE_H_

#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/auth/principal.h"
#include "server/auth/token_file.h"

namespace diarization::server::auth {

// Thread-safe.
class TokenStore {
 public:
  // Reads and parses `path` (an error stops the server from starting) and,
  // when `refresh` > 0, starts the watcher.
  static absl::StatusOr<std::unique_ptr<TokenStore>> Open(
      std::string path, absl::Duration refresh);
  // A fixed table, no file (tests).
  static std::unique_ptr<TokenStore> FromTable(TokenTable table);

  ~TokenStore();  // stops the watcher
  TokenStore(const TokenStore&) = delete;
  TokenStore& operator=(const TokenStore&) = delete;

  // The principal whose token is `token`, null when none. The token is
  // hashed and compared with every entry's hash with CRYPTO_memcmp, so the
  // time taken does not depend on which bytes matched.
  std::shared_ptr<const Principal> Find(std::string_view token) const;

  // Re-reads the file now; keeps the old table (and returns the error)
  // when it does not parse. OK and unchanged when the bytes are the same.
  absl::Status Reload();

  int size() const;

 private:
  TokenStore() = default;
  void Watch(absl::Duration refresh);

  std::string path_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const TokenTable> table_ ABSL_GUARDED_BY(mu_);
  std::string file_bytes_ ABSL_GUARDED_BY(mu_);
  absl::Notification stop_;
  std::thread watcher_;
};

}  // namespace diarization::server::auth

#endif  // DIARIZATION_SERVER_AUTH_TOKEN_STORE_H_
