// The devices' clustering linkages (engine/runtime/device.h,
// Device::linkage) as one pipeline::LinkageAccelerator for the engine's
// host clustering threads: a call goes to the first accelerator that takes
// it (each turns calls away while busy with another), and to the host's
// linkage when none does. Every accelerator gives the host's merges, so
// which one answers never changes a result.
#ifndef DIARIZATION_ENGINE_RUNTIME_LINKAGE_POOL_H_
#define DIARIZATION_ENGINE_RUNTIME_LINKAGE_POOL_H_

#include <memory>
#include <vector>

#include "engine/pipeline/ahc.h"

namespace diarization::runtime {

class LinkagePool final : public pipeline::LinkageAccelerator {
 public:
  // Null entries are skipped.
  explicit LinkagePool(
      std::vector<std::shared_ptr<pipeline::LinkageAccelerator>> members);

  bool empty() const { return members_.empty(); }
  // The largest max_n of the members.
  int max_n() const override { return max_n_; }
  // The first member that takes (n, d) and is free now, in order; null
  // when none is.
  std::unique_ptr<Call> Reserve(int n, int d) override;

 private:
  std::vector<std::shared_ptr<pipeline::LinkageAccelerator>> members_;
  int max_n_ = 0;
};

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_LINKAGE_POOL_H_
