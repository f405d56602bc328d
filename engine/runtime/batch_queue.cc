#include "engine/runtime/batch_queue.h"

#include <algorithm>
#include <utility>

namespace diarization::runtime::internal {

void BatchQueue::Push(WindowTask task) {
  by_job_[task.job->id()].push_back(std::move(task));
  ++size_;
}

std::vector<WindowTask> BatchQueue::PopBatch(int max_batch) {
  std::vector<WindowTask> batch;
  auto it = by_job_.lower_bound(next_job_);
  if (it == by_job_.end()) it = by_job_.begin();
  while (!by_job_.empty() && static_cast<int>(batch.size()) < max_batch) {
    std::deque<WindowTask>& tasks = it->second;
    WindowTask task = std::move(tasks.front());
    tasks.pop_front();
    --size_;
    const uint64_t served = it->first;
    it = tasks.empty() ? by_job_.erase(it) : std::next(it);
    if (it == by_job_.end()) it = by_job_.begin();
    next_job_ = served + 1;
    if (task.job->terminal()) continue;
    batch.push_back(std::move(task));
  }
  // Job by job (stable: a job's windows stay in their queue order).
  std::stable_sort(batch.begin(), batch.end(),
                   [](const WindowTask& a, const WindowTask& b) {
                     return a.job->id() < b.job->id();
                   });
  return batch;
}

std::vector<WindowTask> BatchQueue::PopStreamingBatch(int max_batch) {
  std::vector<WindowTask> batch;
  bool took = true;
  while (took && static_cast<int>(batch.size()) < max_batch) {
    took = false;
    for (auto it = by_job_.begin();
         it != by_job_.end() && static_cast<int>(batch.size()) < max_batch;) {
      std::deque<WindowTask>& tasks = it->second;
      if (!tasks.front().job->streaming()) {
        ++it;
        continue;
      }
      WindowTask task = std::move(tasks.front());
      tasks.pop_front();
      --size_;
      took = true;
      it = tasks.empty() ? by_job_.erase(it) : std::next(it);
      if (task.job->terminal()) continue;
      batch.push_back(std::move(task));
    }
  }
  std::stable_sort(batch.begin(), batch.end(),
                   [](const WindowTask& a, const WindowTask& b) {
                     return a.job->id() < b.job->id();
                   });
  return batch;
}

bool BatchQueue::HasStreaming() const {
  for (const auto& [id, tasks] : by_job_) {
    if (tasks.front().job->streaming()) return true;
  }
  return false;
}

void BatchQueue::DropJob(uint64_t job_id) {
  auto it = by_job_.find(job_id);
  if (it == by_job_.end()) return;
  size_ -= it->second.size();
  by_job_.erase(it);
}

absl::Time BatchQueue::oldest() const {
  absl::Time oldest = absl::InfiniteFuture();
  for (const auto& [id, tasks] : by_job_) {
    oldest = std::min(oldest, tasks.front().enqueued);
  }
  return oldest;
}

}  // namespace diarization::runtime::internal
