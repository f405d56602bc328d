#include "engine/models/cuda/embedding/conv_engine_cache.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace diarization::models {
namespace {

constexpr char kHeader[] = "# diarization conv engine cache v1";

// Tabs and line breaks would break the line format; a GPU name has none in
// practice, but the file must stay parseable whatever the driver says.
std::string Field(std::string s) {
  for (char& ch : s) {
    if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
  }
  return s;
}

uint64_t Fnv1a64(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

// The fields of an entry before its checksum.
std::vector<std::string> Fields(const ConvEngineCache::Entry& e) {
  return {Field(e.env.gpu),
          absl::StrCat(e.env.sm),
          absl::StrCat(e.env.cudnn_version),
          absl::StrCat(e.env.frontend_version),
          Field(e.layer),
          Field(e.choice.engine),
          absl::StrFormat("%.6g", e.choice.ms),
          absl::StrCat(e.choice.workspace)};
}

absl::StatusOr<std::string> ReadFile(const std::string& path, bool* missing) {
  *missing = false;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    *missing = true;
    return std::string();
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    return absl::PermissionDeniedError(absl::StrCat(
        "conv engine cache ", path, ": exists but cannot be opened (",
        std::strerror(errno), "); fix its permissions or pass another path"));
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

bool ParseCudnnEngineTag(const std::string& tag, int64_t* engine,
                         std::map<int, int64_t>* knobs) {
  const std::vector<std::string> parts = absl::StrSplit(tag, '_');
  if (parts.empty() || parts[0].size() < 4 || parts[0].rfind("eng", 0) != 0 ||
      !absl::SimpleAtoi(parts[0].substr(3), engine) || *engine < 0) {
    return false;
  }
  knobs->clear();
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::vector<std::string> kv = absl::StrSplit(parts[i], '=');
    int type = 0;
    int64_t choice = 0;
    if (kv.size() != 2 || kv[0].size() < 2 || kv[0][0] != 'k' ||
        !absl::SimpleAtoi(kv[0].substr(1), &type) || type < 0 ||
        !absl::SimpleAtoi(kv[1], &choice) || knobs->count(type) > 0) {
      return false;
    }
    (*knobs)[type] = choice;
  }
  return true;
}

std::string ConvLayerKey::ToString() const {
  return absl::StrCat(precision, " ", policy, " ", epilogue, " n", n, " c", c,
                      " h", h, " w", w, " k", k, " f", kernel_h, "x", kernel_w,
                      " s", stride_h, "x", stride_w, " p", pad_h, "x", pad_w,
                      " ws", workspace_limit);
}

std::string ConvEngineCache::FormatLine(const Entry& e) {
  const std::vector<std::string> f = Fields(e);
  const std::string body = absl::StrJoin(f, "\t");
  return absl::StrCat(body, "\t", absl::StrFormat("%016x", Fnv1a64(body)));
}

std::optional<ConvEngineCache::Entry> ConvEngineCache::ParseLine(
    const std::string& line) {
  const std::vector<std::string> f = absl::StrSplit(line, '\t');
  if (f.size() != 9) return std::nullopt;
  std::vector<std::string> body_fields(f.begin(), f.end() - 1);
  const std::string body = absl::StrJoin(body_fields, "\t");
  if (absl::StrFormat("%016x", Fnv1a64(body)) != f[8]) return std::nullopt;
  Entry e;
  e.env.gpu = f[0];
  e.layer = f[4];
  e.choice.engine = f[5];
  if (e.env.gpu.empty() || e.layer.empty() || e.choice.engine.empty() ||
      !absl::SimpleAtoi(f[1], &e.env.sm) ||
      !absl::SimpleAtoi(f[2], &e.env.cudnn_version) ||
      !absl::SimpleAtoi(f[3], &e.env.frontend_version) ||
      !absl::SimpleAtod(f[6], &e.choice.ms) ||
      !absl::SimpleAtoi(f[7], &e.choice.workspace)) {
    return std::nullopt;
  }
  return e;
}

ConvEngineCache::Key ConvEngineCache::MakeKey(const ConvEngineEnvironment& env,
                                              const std::string& layer) {
  return absl::StrCat(Field(env.gpu), "\t", env.sm, "\t", env.cudnn_version,
                      "\t", env.frontend_version, "\t", Field(layer));
}

ConvEngineCache::LoadReport ConvEngineCache::Parse(const std::string& text,
                                                   std::map<Key, Entry>* out) {
  LoadReport r;
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty()) return r;
  if (lines.front() != kHeader) {
    r.foreign_format = true;
    return r;
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    std::optional<Entry> e = ParseLine(lines[i]);
    if (!e) {
      ++r.corrupt;
      continue;
    }
    ++r.entries;
    (*out)[MakeKey(e->env, e->layer)] = std::move(*e);
  }
  return r;
}

absl::StatusOr<std::unique_ptr<ConvEngineCache>> ConvEngineCache::Load(
    const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("conv engine cache: empty path");
  }
  bool missing = false;
  absl::StatusOr<std::string> text = ReadFile(path, &missing);
  if (!text.ok()) return text.status();
  std::unique_ptr<ConvEngineCache> c(new ConvEngineCache(path));
  c->report_ = Parse(*text, &c->entries_);
  c->report_.missing = missing;
  return c;
}

absl::StatusOr<std::shared_ptr<ConvEngineCache>> ConvEngineCache::Shared(
    const std::string& path) {
  static std::mutex mu;
  static auto* by_path =
      new std::map<std::string, std::weak_ptr<ConvEngineCache>>();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = by_path->find(path); it != by_path->end()) {
    if (std::shared_ptr<ConvEngineCache> c = it->second.lock()) return c;
  }
  absl::StatusOr<std::unique_ptr<ConvEngineCache>> c = Load(path);
  if (!c.ok()) return c.status();
  std::shared_ptr<ConvEngineCache> shared = std::move(*c);
  (*by_path)[path] = shared;
  return shared;
}

ConvEngineCache::LoadReport ConvEngineCache::load_report() const {
  std::lock_guard<std::mutex> lock(mu_);
  return report_;
}

ConvEngineCache::Census ConvEngineCache::Count(
    const ConvEngineEnvironment& env) const {
  std::lock_guard<std::mutex> lock(mu_);
  Census c;
  for (const auto& [key, e] : entries_) {
    if (e.env.gpu != Field(env.gpu) || e.env.sm != env.sm) {
      ++c.other_gpu;
    } else if (e.env.cudnn_version != env.cudnn_version ||
               e.env.frontend_version != env.frontend_version) {
      ++c.other_versions;
    } else {
      ++c.usable;
    }
  }
  return c;
}

std::optional<ConvEngineChoice> ConvEngineCache::Find(
    const ConvEngineEnvironment& env, const ConvLayerKey& layer) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(MakeKey(env, layer.ToString()));
  if (it == entries_.end()) return std::nullopt;
  return it->second.choice;
}

void ConvEngineCache::Record(const ConvEngineEnvironment& env,
                             const ConvLayerKey& layer,
                             const ConvEngineChoice& choice) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry e{.env = env, .layer = layer.ToString(), .choice = choice};
  e.env.gpu = Field(e.env.gpu);
  const Key key = MakeKey(env, e.layer);
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second.choice == choice) return;
  entries_[key] = e;
  changes_[key] = e;
  dirty_ = true;
}

void ConvEngineCache::Forget(const ConvEngineEnvironment& env,
                             const ConvLayerKey& layer) {
  std::lock_guard<std::mutex> lock(mu_);
  const Key key = MakeKey(env, layer.ToString());
  if (entries_.erase(key) == 0) return;
  changes_[key] = std::nullopt;
  dirty_ = true;
}

bool ConvEngineCache::dirty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dirty_;
}

absl::Status ConvEngineCache::Save() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dirty_) return absl::OkStatus();
  // What another writer put there since this object read the file, then
  // this object's own changes on top.
  bool missing = false;
  absl::StatusOr<std::string> text = ReadFile(path_, &missing);
  std::map<Key, Entry> merged;
  if (text.ok()) (void)Parse(*text, &merged);
  for (const auto& [key, e] : entries_) merged.emplace(key, e);
  for (const auto& [key, change] : changes_) {
    if (change) {
      merged[key] = *change;
    } else {
      merged.erase(key);
    }
  }
  std::string out = absl::StrCat(kHeader, "\n");
  for (const auto& [key, e] : merged)
    absl::StrAppend(&out, FormatLine(e), "\n");

  static std::atomic<int> counter{0};
  const std::string tmp =
      absl::StrCat(path_, ".tmp.", getpid(), ".", counter.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << out;
    f.flush();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return absl::UnavailableError(absl::StrCat(
          "conv engine cache ", path_, ": cannot write ", tmp, " (",
          std::strerror(errno), "); the choice stays in memory only"));
    }
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return absl::UnavailableError(
        absl::StrCat("conv engine cache ", path_, ": cannot replace it (",
                     std::strerror(err), "); the choice stays in memory only"));
  }
  entries_ = std::move(merged);
  changes_.clear();
  dirty_ = false;
  return absl::OkStatus();
}

}  // namespace diarization::models
