// The device memory arena: one per GPU, every byte the engine puts on the
// device comes from here and is booked to an owner.
//
// Why an arena: the service must know, at any time, how much device memory
// each model, batch buffer and library workspace holds, and must fail a
// request cleanly (ResourceExhausted) instead of letting an unaccounted
// cudaMalloc take the device down. The CUDA virtual memory API lets us
// reserve one large address range up front and back it with physical memory
// piece by piece, so the arena grows without moving anything that was
// already handed out (pointers captured in CUDA graphs stay valid).
//
// Reservation ladder: the address reservation is tried at each rung of
// `reservation_ladder` (largest first) until the driver grants one; the rung
// taken is reported in the stats. Budget: the physical memory the arena maps
// may not exceed `budget_bytes`. With `no_spill` (the default) an allocation
// that would exceed it fails with ResourceExhausted naming the owner, the
// request and the ledger; without it the arena keeps mapping up to the
// reservation and books the excess as `spilled_bytes` (still accounted,
// never a silent cudaMalloc).
//
// All driver calls go through VmmDriver so that tests without a GPU can inject
// refusals and failures (see device_arena_test.cc); CreateCudaVmmDriver() in
// device_arena_cuda.h is the real one.
#ifndef DIARIZATION_ENGINE_MODELS_CUDA_DEVICE_ARENA_H_
#define DIARIZATION_ENGINE_MODELS_CUDA_DEVICE_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace diarization::models {

// The driver's virtual memory operations, as the arena needs them. Addresses
// and physical handles are opaque 64-bit values (CUdeviceptr and
// CUmemGenericAllocationHandle for the CUDA driver).
class VmmDriver {
 public:
  virtual ~VmmDriver() = default;
  // Minimum granularity of physical allocations on `device`, in bytes.
  virtual absl::StatusOr<size_t> Granularity(int device) = 0;
  // Reserves `size` bytes of device address space.
  virtual absl::StatusOr<uint64_t> Reserve(size_t size, size_t alignment) = 0;
  virtual absl::Status FreeReservation(uint64_t base, size_t size) = 0;
  // Allocates `size` bytes of physical memory on `device`.
  virtual absl::StatusOr<uint64_t> CreatePhysical(size_t size, int device) = 0;
  virtual absl::Status ReleasePhysical(uint64_t handle) = 0;
  virtual absl::Status Map(uint64_t va, size_t size, uint64_t handle) = 0;
  virtual absl::Status Unmap(uint64_t va, size_t size) = 0;
  // Grants read/write access to [va, va+size) for `device`.
  virtual absl::Status SetAccess(uint64_t va, size_t size, int device) = 0;
};

struct DeviceArenaOptions {
  int device = 0;
  // Address-space sizes to try, largest first. Each is rounded up to the
  // granularity. Must not be empty.
  std::vector<size_t> reservation_ladder = {size_t{64} << 30, size_t{16} << 30,
                                            size_t{4} << 30, size_t{1} << 30,
                                            size_t{256} << 20};
  // Most physical memory the arena maps, in bytes.
  size_t budget_bytes = size_t{8} << 30;
  // true: exceeding the budget is an error. false: map past the budget (up
  // to the reservation) and book the excess as spilled.
  bool no_spill = true;
  // Alignment of every allocation (a power of two).
  size_t alignment = 256;
  // Physical memory is mapped in pieces of this many bytes (rounded up to the
  // granularity; 0 = the granularity itself).
  size_t map_chunk_bytes = 0;
};

struct OwnerStats {
  size_t used_bytes = 0;
  size_t peak_bytes = 0;
  int64_t live_allocations = 0;
};

struct DeviceArenaStats {
  int device = 0;
  int rung_index = -1;        // index into reservation_ladder
  size_t reserved_bytes = 0;  // address space reserved
  size_t mapped_bytes = 0;    // physical memory mapped
  size_t used_bytes = 0;      // handed out (aligned sizes)
  size_t peak_used_bytes = 0;
  size_t peak_mapped_bytes = 0;
  size_t budget_bytes = 0;
  size_t spilled_bytes = 0;  // mapped beyond the budget (no_spill=false)
  size_t granularity_bytes = 0;
  size_t external_bytes = 0;  // booked by RecordExternal (not arena memory)
  int64_t live_allocations = 0;
  int64_t failed_allocations = 0;
  std::map<std::string, OwnerStats> owners;  // arena allocations
  std::map<std::string, size_t> external;    // e.g. cuDNN handle internals
};

class DeviceArena {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceArena>> Create(
      const DeviceArenaOptions& options, std::unique_ptr<VmmDriver> driver);
  // Unmaps and releases everything and frees the reservation. Pointers handed
  // out become invalid.
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // `bytes` > 0; the result is aligned to options.alignment and booked to
  // `owner`. ResourceExhausted when the budget (no_spill) or the reservation
  // would be exceeded, or the driver refuses physical memory.
  absl::StatusOr<void*> Allocate(size_t bytes, std::string_view owner);
  // `ptr` must come from Allocate and not have been freed.
  absl::Status Free(void* ptr);

  // Books device memory that the arena cannot hand out itself (e.g. what
  // cudnnCreate allocates internally, measured with cudaMemGetInfo) so the
  // ledger still accounts for every byte. Replaces an earlier entry of the
  // same owner.
  void RecordExternal(std::string_view owner, size_t bytes);

  DeviceArenaStats Stats() const;
  // The size of every live allocation (aligned), per owner, largest first:
  // where an owner's bytes go, for the benchmark's memory breakdown.
  std::map<std::string, std::vector<size_t>> LiveAllocationSizes() const;
  // Multi-line human-readable ledger.
  std::string DebugString() const;
  int device() const { return options_.device; }

 private:
  struct Piece {
    uint64_t va;
    size_t size;
    uint64_t handle;
  };
  struct Allocation {
    size_t size;
    std::string owner;
  };

  DeviceArena(const DeviceArenaOptions& options,
              std::unique_ptr<VmmDriver> driver);
  absl::Status EnsureMappedLocked(size_t end_offset, std::string_view owner,
                                  size_t request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string LedgerLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DeviceArenaOptions options_;
  std::unique_ptr<VmmDriver> driver_;
  uint64_t base_ = 0;
  size_t granularity_ = 0;
  size_t chunk_ = 0;

  mutable absl::Mutex mu_;
  DeviceArenaStats stats_ ABSL_GUARDED_BY(mu_);
  std::vector<Piece> pieces_ ABSL_GUARDED_BY(mu_);
  // offset -> size of free ranges, coalesced.
  std::map<size_t, size_t> free_ ABSL_GUARDED_BY(mu_);
  std::map<size_t, Allocation> live_ ABSL_GUARDED_BY(mu_);
};

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_CUDA_DEVICE_ARENA_H_
