// A persistent record of the cuDNN graph engine chosen per convolution
// shape (cudnn_graph_conv.h), so that a restart builds the one plan that was
// chosen instead of building and timing up to eight candidates per layer
// (ADR 0072, addendum). Plain C++: no CUDA, no cuDNN; the caller supplies the
// environment and the layer's key, and the engine is the cuDNN frontend's
// own identifier (the plan name "eng<global index>_k<knob>=<choice>...",
// which names the engine and every knob choice) or "legacy".
//
// Contract:
// - An entry is used only where environment and layer key match exactly
//   (GPU name and SM, cuDNN and frontend versions; precision, selection
//   policy, epilogue, tensor and filter shape, workspace limit). Anything
//   else in the file is kept but never used: entries of another GPU or
//   another library version, and lines that do not parse or fail their
//   checksum (counted in load_report(), which the caller reports as a
//   diagnostic).
// - The cache is advice, never a result: the caller validates an entry by
//   building its plan (and forgets it where that fails), so a stale or
//   edited entry costs a timing, never a wrong output or a failed load.
// - Save() writes the whole file through a temporary file and a rename, and
//   first merges in the entries another process (or pipeline) wrote since
//   this one read it; this object's own entries win. A missing file is an
//   empty cache.
// - Thread-safe: the pipelines of a process share one object per path
//   (Shared()).
//
// File format (text, one entry per line, tab-separated):
//   # diarization conv engine cache v1
//   gpu <TAB> sm <TAB> cudnn <TAB> frontend <TAB> layer key <TAB> engine
//       <TAB> ms <TAB> workspace bytes <TAB> checksum
// The checksum is FNV-1a 64 (hex) of the line's other fields joined by
// tabs; a line that fails it is "corrupt".
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CONV_ENGINE_CACHE_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CONV_ENGINE_CACHE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace diarization::models {

// What a chosen engine depends on besides the layer: the GPU and the
// libraries.
struct ConvEngineEnvironment {
  std::string gpu;               // cudaDeviceProp::name
  int sm = 0;                    // compute capability, major * 10 + minor
  int64_t cudnn_version = 0;     // cudnnGetVersion()
  int64_t frontend_version = 0;  // CUDNN_FRONTEND_VERSION
};

// One convolution as the graph path runs it.
struct ConvLayerKey {
  // "tf32" (files written before ADR 0092 may also hold "mixed" entries,
  // which no key matches any more).
  std::string precision;
  // How candidates are chosen ("graph", with or without the runtime-compiled
  // engines, and the candidate count; the deleted "fastest" policy's entries
  // match no key): another policy may choose differently.
  std::string policy;
  std::string epilogue;  // "conv", "conv+bias+relu", "conv+bias+add+relu"
  int n = 0, c = 0, h = 0, w = 0, k = 0;
  int kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, pad_h = 0,
      pad_w = 0;
  int64_t workspace_limit = 0;
  // The canonical one-field form used in the file.
  std::string ToString() const;
};

struct ConvEngineChoice {
  // The cuDNN frontend's plan name of the chosen engine, or "legacy".
  std::string engine;
  // Its timed milliseconds when chosen (informational; -1 if not timed).
  double ms = -1;
  int64_t workspace = 0;
  bool operator==(const ConvEngineChoice&) const = default;
};

// The cuDNN frontend's plan name, "eng<global index>" then
// "_k<knob type>=<choice>" per knob (cudnn_frontend::detail::get_engine_tag;
// the knob type is cuDNN's cudnnBackendKnobType_t value), read back into
// the engine's global index and its knob choices. False if `tag` is not
// one (e.g. "legacy").
bool ParseCudnnEngineTag(const std::string& tag, int64_t* engine,
                         std::map<int, int64_t>* knobs);

class ConvEngineCache {
 public:
  struct LoadReport {
    int entries = 0;       // valid lines
    int corrupt = 0;       // lines that did not parse or failed the checksum
    bool missing = false;  // no file yet
    // Not a cache file (wrong or missing header): nothing of it was used.
    bool foreign_format = false;
  };
  // How many loaded entries belong to `env`, to another GPU, or to this GPU
  // with other library versions (for the load diagnostic).
  struct Census {
    int usable = 0, other_gpu = 0, other_versions = 0;
  };

  // Reads `path` (a missing file is an empty cache; an unreadable one is
  // an error only when it exists and cannot be opened).
  static absl::StatusOr<std::unique_ptr<ConvEngineCache>> Load(
      const std::string& path);
  // One object per path for the whole process (created on first use).
  static absl::StatusOr<std::shared_ptr<ConvEngineCache>> Shared(
      const std::string& path);

  const std::string& path() const { return path_; }
  LoadReport load_report() const;
  Census Count(const ConvEngineEnvironment& env) const;

  std::optional<ConvEngineChoice> Find(const ConvEngineEnvironment& env,
                                       const ConvLayerKey& layer) const;
  void Record(const ConvEngineEnvironment& env, const ConvLayerKey& layer,
              const ConvEngineChoice& choice);
  // The entry did not validate (its plan no longer builds): dropped here
  // and, at the next Save(), from the file.
  void Forget(const ConvEngineEnvironment& env, const ConvLayerKey& layer);
  // Whether Record/Forget changed anything since the last Save().
  bool dirty() const;
  // Writes the file (merged with what is on disk now); no-op when clean.
  absl::Status Save();

  // The file's text for these entries (exposed for tests).
  struct Entry {
    ConvEngineEnvironment env;
    std::string layer;
    ConvEngineChoice choice;
  };
  static std::string FormatLine(const Entry& e);
  // Nullopt: not a valid entry line.
  static std::optional<Entry> ParseLine(const std::string& line);

 private:
  explicit ConvEngineCache(std::string path) : path_(std::move(path)) {}
  using Key = std::string;  // env fields + layer, tab-joined
  static Key MakeKey(const ConvEngineEnvironment& env,
                     const std::string& layer);
  // Parses `text` into `out`; returns the report.
  static LoadReport Parse(const std::string& text, std::map<Key, Entry>* out);

  const std::string path_;
  mutable std::mutex mu_;
  std::map<Key, Entry> entries_;
  // Keys this object recorded or forgot since it loaded (they win over the
  // file at Save()).
  std::map<Key, std::optional<Entry>> changes_;
  bool dirty_ = false;
  LoadReport report_;
};

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_EMBEDDING_CONV_ENGINE_CACHE_H_
