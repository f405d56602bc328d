#include "engine/runtime/linkage_pool.h"

#include <algorithm>
#include <utility>

namespace diarization::runtime {

LinkagePool::LinkagePool(
    std::vector<std::shared_ptr<pipeline::LinkageAccelerator>> members) {
  for (auto& m : members) {
    if (m == nullptr) continue;
    max_n_ = std::max(max_n_, m->max_n());
    members_.push_back(std::move(m));
  }
}

std::unique_ptr<pipeline::LinkageAccelerator::Call> LinkagePool::Reserve(
    int n, int d) {
  for (const auto& m : members_) {
    if (n > m->max_n()) continue;
    if (std::unique_ptr<Call> call = m->Reserve(n, d)) return call;
  }
  return nullptr;
}

}  // namespace diarization::runtime
