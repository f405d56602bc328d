#include "engine/models/cuda/device_arena.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/common/diagnostics.h"
#include "engine/common/status_macros.h"

namespace diarization::models {
namespace {

size_t RoundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

bool IsPowerOfTwo(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::string Bytes(size_t b) {
  if (b >= (size_t{1} << 30))
    return absl::StrFormat("%.2f GiB", b / 1073741824.0);
  if (b >= (size_t{1} << 20)) return absl::StrFormat("%.2f MiB", b / 1048576.0);
  if (b >= 1024) return absl::StrFormat("%.2f KiB", b / 1024.0);
  return absl::StrCat(b, " B");
}

}  // namespace

DeviceArena::DeviceArena(const DeviceArenaOptions& options,
                         std::unique_ptr<VmmDriver> driver)
    : options_(options), driver_(std::move(driver)) {}

absl::StatusOr<std::unique_ptr<DeviceArena>> DeviceArena::Create(
    const DeviceArenaOptions& options, std::unique_ptr<VmmDriver> driver) {
  if (driver == nullptr) {
    return absl::InvalidArgumentError("DeviceArena: no VmmDriver given");
  }
  if (options.reservation_ladder.empty()) {
    return absl::InvalidArgumentError(
        "DeviceArena: reservation_ladder is empty; give at least one size");
  }
  if (!IsPowerOfTwo(options.alignment)) {
    return absl::InvalidArgumentError(absl::StrCat("DeviceArena: alignment ",
                                                   options.alignment,
                                                   " is not a power of two"));
  }
  if (options.budget_bytes == 0) {
    return absl::InvalidArgumentError("DeviceArena: budget_bytes is 0");
  }
  auto arena =
      std::unique_ptr<DeviceArena>(new DeviceArena(options, std::move(driver)));
  ASSIGN_OR_RETURN(arena->granularity_,
                   arena->driver_->Granularity(options.device));
  if (arena->granularity_ == 0) {
    return absl::InternalError("DeviceArena: driver reported granularity 0");
  }
  arena->chunk_ =
      RoundUp(std::max(options.map_chunk_bytes, arena->granularity_),
              arena->granularity_);

  // Descend the ladder until the driver grants an address range.
  std::vector<std::string> refusals;
  int rung = -1;
  size_t reserved = 0;
  for (size_t i = 0; i < options.reservation_ladder.size(); ++i) {
    const size_t size =
        RoundUp(options.reservation_ladder[i], arena->granularity_);
    absl::StatusOr<uint64_t> base =
        arena->driver_->Reserve(size, arena->granularity_);
    if (base.ok()) {
      arena->base_ = *base;
      rung = static_cast<int>(i);
      reserved = size;
      break;
    }
    refusals.push_back(
        absl::StrCat(Bytes(size), ": ", base.status().message()));
  }
  if (rung < 0) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "DeviceArena: device ", options.device,
        " refused every address reservation on the ladder (",
        absl::StrJoin(refusals, "; "),
        "). Add smaller rungs to reservation_ladder or free address space."));
  }
  if (rung > 0) {
    ReportDiagnostic(
        "DeviceArena",
        absl::StrCat("device ", options.device, " reserved ", Bytes(reserved),
                     " on rung ", rung, " after ", refusals.size(),
                     " refusal(s): ", absl::StrJoin(refusals, "; ")));
  }
  absl::MutexLock lock(&arena->mu_);
  arena->stats_.device = options.device;
  arena->stats_.rung_index = rung;
  arena->stats_.reserved_bytes = reserved;
  arena->stats_.budget_bytes = options.budget_bytes;
  arena->stats_.granularity_bytes = arena->granularity_;
  arena->free_[0] = reserved;
  return arena;
}

DeviceArena::~DeviceArena() {
  absl::MutexLock lock(&mu_);
  // Unmap in reverse order; report but do not stop on errors (destructor).
  for (auto it = pieces_.rbegin(); it != pieces_.rend(); ++it) {
    absl::Status s = driver_->Unmap(it->va, it->size);
    if (!s.ok())
      ReportDiagnostic("DeviceArena", "unmap failed: " + s.ToString());
    s = driver_->ReleasePhysical(it->handle);
    if (!s.ok()) {
      ReportDiagnostic("DeviceArena", "release failed: " + s.ToString());
    }
  }
  pieces_.clear();
  if (stats_.reserved_bytes > 0) {
    absl::Status s = driver_->FreeReservation(base_, stats_.reserved_bytes);
    if (!s.ok()) {
      ReportDiagnostic("DeviceArena",
                       "freeing the reservation failed: " + s.ToString());
    }
  }
}

absl::Status DeviceArena::EnsureMappedLocked(size_t end_offset,
                                             std::string_view owner,
                                             size_t request) {
  if (end_offset <= stats_.mapped_bytes) return absl::OkStatus();
  const size_t target =
      std::min(RoundUp(end_offset, chunk_), stats_.reserved_bytes);
  if (target > options_.budget_bytes && options_.no_spill) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "DeviceArena: device ", options_.device, ": allocating ",
        Bytes(request), " for '", std::string(owner), "' needs ", Bytes(target),
        " mapped, over the budget of ", Bytes(options_.budget_bytes),
        " (no-spill mode; used ", Bytes(stats_.used_bytes), ", mapped ",
        Bytes(stats_.mapped_bytes),
        "). Raise the budget or lower batch sizes. Ledger: ", LedgerLocked()));
  }
  // Map new pieces one chunk at a time; on failure undo this call's pieces so
  // the arena is unchanged.
  const size_t first_new = pieces_.size();
  size_t mapped = stats_.mapped_bytes;
  absl::Status failure;
  while (mapped < target) {
    const size_t size = std::min(chunk_, stats_.reserved_bytes - mapped);
    const uint64_t va = base_ + mapped;
    absl::StatusOr<uint64_t> handle =
        driver_->CreatePhysical(size, options_.device);
    if (!handle.ok()) {
      failure = handle.status();
      break;
    }
    absl::Status s = driver_->Map(va, size, *handle);
    if (!s.ok()) {
      (void)driver_->ReleasePhysical(*handle);
      failure = s;
      break;
    }
    s = driver_->SetAccess(va, size, options_.device);
    if (!s.ok()) {
      (void)driver_->Unmap(va, size);
      (void)driver_->ReleasePhysical(*handle);
      failure = s;
      break;
    }
    pieces_.push_back({va, size, *handle});
    mapped += size;
  }
  if (!failure.ok()) {
    while (pieces_.size() > first_new) {
      (void)driver_->Unmap(pieces_.back().va, pieces_.back().size);
      (void)driver_->ReleasePhysical(pieces_.back().handle);
      pieces_.pop_back();
    }
    return absl::ResourceExhaustedError(
        absl::StrCat("DeviceArena: device ", options_.device,
                     ": the driver refused physical "
                     "memory while allocating ",
                     Bytes(request), " for '", std::string(owner), "' (mapped ",
                     Bytes(stats_.mapped_bytes), ", wanted ", Bytes(target),
                     "): ", failure.message(), ". Ledger: ", LedgerLocked()));
  }
  stats_.mapped_bytes = mapped;
  stats_.peak_mapped_bytes = std::max(stats_.peak_mapped_bytes, mapped);
  if (mapped > options_.budget_bytes) {
    const size_t spilled = mapped - options_.budget_bytes;
    if (spilled > stats_.spilled_bytes) {
      ReportDiagnostic(
          "DeviceArena",
          absl::StrCat("device ", options_.device,
                       " spilled past its budget of ",
                       Bytes(options_.budget_bytes), ": ", Bytes(mapped),
                       " mapped for '", std::string(owner), "'"));
    }
    stats_.spilled_bytes = std::max(stats_.spilled_bytes, spilled);
  }
  return absl::OkStatus();
}

absl::StatusOr<void*> DeviceArena::Allocate(size_t bytes,
                                            std::string_view owner) {
  if (bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DeviceArena: zero-byte allocation for '", std::string(owner), "'"));
  }
  if (owner.empty()) {
    return absl::InvalidArgumentError(
        "DeviceArena: allocation without an owner tag");
  }
  absl::MutexLock lock(&mu_);
  const size_t size = RoundUp(bytes, options_.alignment);
  // First fit: the lowest free range keeps the mapped high-water mark low.
  // Free ranges start aligned because every size is a multiple of alignment.
  auto it = free_.begin();
  for (; it != free_.end(); ++it) {
    if (it->second >= size) break;
  }
  if (it == free_.end()) {
    ++stats_.failed_allocations;
    return absl::ResourceExhaustedError(absl::StrCat(
        "DeviceArena: device ", options_.device, ": no free range of ",
        Bytes(size), " for '", std::string(owner), "' in the ",
        Bytes(stats_.reserved_bytes), " reservation (used ",
        Bytes(stats_.used_bytes), "). Ledger: ", LedgerLocked()));
  }
  const size_t offset = it->first;
  absl::Status mapped = EnsureMappedLocked(offset + size, owner, bytes);
  if (!mapped.ok()) {
    ++stats_.failed_allocations;
    return mapped;
  }
  const size_t remaining = it->second - size;
  free_.erase(it);
  if (remaining > 0) free_[offset + size] = remaining;
  live_[offset] = Allocation{size, std::string(owner)};

  stats_.used_bytes += size;
  stats_.peak_used_bytes = std::max(stats_.peak_used_bytes, stats_.used_bytes);
  ++stats_.live_allocations;
  OwnerStats& o = stats_.owners[std::string(owner)];
  o.used_bytes += size;
  o.peak_bytes = std::max(o.peak_bytes, o.used_bytes);
  ++o.live_allocations;
  return reinterpret_cast<void*>(base_ + offset);
}

absl::Status DeviceArena::Free(void* ptr) {
  absl::MutexLock lock(&mu_);
  const uint64_t addr = reinterpret_cast<uint64_t>(ptr);
  if (addr < base_ || addr >= base_ + stats_.reserved_bytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("DeviceArena: Free(%p) is outside device %d's arena",
                        ptr, options_.device));
  }
  const size_t offset = addr - base_;
  auto it = live_.find(offset);
  if (it == live_.end()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "DeviceArena: Free(%p) is not a live allocation (double free?)", ptr));
  }
  const size_t size = it->second.size;
  OwnerStats& o = stats_.owners[it->second.owner];
  o.used_bytes -= size;
  --o.live_allocations;
  stats_.used_bytes -= size;
  --stats_.live_allocations;
  live_.erase(it);

  // Insert and coalesce with neighbours.
  size_t start = offset;
  size_t length = size;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + size) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      start = prev->first;
      length += prev->second;
      free_.erase(prev);
    }
  }
  free_[start] = length;
  return absl::OkStatus();
}

void DeviceArena::RecordExternal(std::string_view owner, size_t bytes) {
  absl::MutexLock lock(&mu_);
  auto& slot = stats_.external[std::string(owner)];
  stats_.external_bytes = stats_.external_bytes - slot + bytes;
  slot = bytes;
}

DeviceArenaStats DeviceArena::Stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

std::map<std::string, std::vector<size_t>> DeviceArena::LiveAllocationSizes()
    const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, std::vector<size_t>> sizes;
  for (const auto& [offset, a] : live_) sizes[a.owner].push_back(a.size);
  for (auto& [owner, v] : sizes) std::sort(v.rbegin(), v.rend());
  return sizes;
}

std::string DeviceArena::LedgerLocked() const {
  std::vector<std::string> parts;
  for (const auto& [owner, o] : stats_.owners) {
    if (o.used_bytes == 0) continue;
    parts.push_back(absl::StrCat(owner, "=", Bytes(o.used_bytes)));
  }
  for (const auto& [owner, b] : stats_.external) {
    parts.push_back(absl::StrCat(owner, "(external)=", Bytes(b)));
  }
  return parts.empty() ? "empty" : absl::StrJoin(parts, ", ");
}

std::string DeviceArena::DebugString() const {
  absl::MutexLock lock(&mu_);
  std::string out = absl::StrFormat(
      "device %d arena: reserved %s (rung %d), mapped %s (peak %s), used %s "
      "(peak %s), budget %s%s, spilled %s, external %s, %d live allocations\n",
      stats_.device, Bytes(stats_.reserved_bytes), stats_.rung_index,
      Bytes(stats_.mapped_bytes), Bytes(stats_.peak_mapped_bytes),
      Bytes(stats_.used_bytes), Bytes(stats_.peak_used_bytes),
      Bytes(stats_.budget_bytes), options_.no_spill ? " (no-spill)" : "",
      Bytes(stats_.spilled_bytes), Bytes(stats_.external_bytes),
      stats_.live_allocations);
  for (const auto& [owner, o] : stats_.owners) {
    absl::StrAppendFormat(&out, "  %-40s used %12s  peak %12s  live %d\n",
                          owner, Bytes(o.used_bytes), Bytes(o.peak_bytes),
                          o.live_allocations);
  }
  for (const auto& [owner, b] : stats_.external) {
    absl::StrAppendFormat(&out, "  %-40s external %s\n", owner, Bytes(b));
  }
  return out;
}

}  // namespace diarization::models
