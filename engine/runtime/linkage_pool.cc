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

bool LinkagePool::CentroidLinkage(const pipeline::SquareMatrix& upper, int n,
                                  std::vector<pipeline::Merge>* merges) {
  for (const auto& m : members_) {
    if (n <= m->max_n() && m->CentroidLinkage(upper, n, merges)) return true;
  }
  return false;
}

}  // namespace diarization::runtime
