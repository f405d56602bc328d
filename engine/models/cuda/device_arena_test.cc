// DeviceArena against a fake VmmDriver: the reservation ladder's descent, the
// budget, driver failures and the ledger, all without a GPU.
#include "engine/models/cuda/device_arena.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace diarization::models {
namespace {

using ::testing::HasSubstr;

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;

// Shared state so tests can inspect the fake after the arena owns it.
struct FakeState {
  size_t granularity = 2 * kMiB;
  size_t max_reservation = SIZE_MAX;  // larger requests are refused
  size_t physical_capacity = SIZE_MAX;
  int fail_map_after = -1;  // Map fails once this many succeeded
  int fail_access_after = -1;
  std::vector<size_t> reserve_requests;
  std::map<uint64_t, size_t> reservations;
  std::map<uint64_t, size_t> handles;  // live physical handles -> size
  std::map<uint64_t, std::pair<size_t, uint64_t>>
      mappings;  // va -> size, handle
  size_t physical_in_use = 0;
  int maps = 0;
  int accesses = 0;
  uint64_t next_va = 0x7f0000000000ull;
  uint64_t next_handle = 1;
};

class FakeDriver : public VmmDriver {
 public:
  explicit FakeDriver(FakeState* s) : s_(s) {}
  absl::StatusOr<size_t> Granularity(int) override { return s_->granularity; }
  absl::StatusOr<uint64_t> Reserve(size_t size, size_t alignment) override {
    s_->reserve_requests.push_back(size);
    EXPECT_EQ(size % s_->granularity, 0u);
    if (size > s_->max_reservation) {
      return absl::ResourceExhaustedError("fake: address space refused");
    }
    const uint64_t va = s_->next_va;
    s_->next_va += size + alignment;
    s_->reservations[va] = size;
    return va;
  }
  absl::Status FreeReservation(uint64_t base, size_t size) override {
    auto it = s_->reservations.find(base);
    if (it == s_->reservations.end() || it->second != size) {
      return absl::InternalError("fake: bad FreeReservation");
    }
    s_->reservations.erase(it);
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> CreatePhysical(size_t size, int) override {
    EXPECT_EQ(size % s_->granularity, 0u);
    if (s_->physical_in_use + size > s_->physical_capacity) {
      return absl::ResourceExhaustedError("fake: out of physical memory");
    }
    s_->physical_in_use += size;
    const uint64_t h = s_->next_handle++;
    s_->handles[h] = size;
    return h;
  }
  absl::Status ReleasePhysical(uint64_t handle) override {
    auto it = s_->handles.find(handle);
    if (it == s_->handles.end()) return absl::InternalError("fake: bad handle");
    s_->physical_in_use -= it->second;
    s_->handles.erase(it);
    return absl::OkStatus();
  }
  absl::Status Map(uint64_t va, size_t size, uint64_t handle) override {
    if (s_->fail_map_after >= 0 && s_->maps >= s_->fail_map_after) {
      return absl::InternalError("fake: map failed");
    }
    // Must lie inside a reservation and not overlap an existing mapping.
    bool inside = false;
    for (const auto& [base, len] : s_->reservations) {
      if (va >= base && va + size <= base + len) inside = true;
    }
    EXPECT_TRUE(inside) << "mapping outside every reservation";
    for (const auto& [mva, m] : s_->mappings) {
      EXPECT_TRUE(va + size <= mva || mva + m.first <= va) << "overlapping map";
    }
    ++s_->maps;
    s_->mappings[va] = {size, handle};
    return absl::OkStatus();
  }
  absl::Status Unmap(uint64_t va, size_t size) override {
    auto it = s_->mappings.find(va);
    if (it == s_->mappings.end() || it->second.first != size) {
      return absl::InternalError("fake: bad unmap");
    }
    s_->mappings.erase(it);
    return absl::OkStatus();
  }
  absl::Status SetAccess(uint64_t va, size_t size, int) override {
    if (s_->fail_access_after >= 0 && s_->accesses >= s_->fail_access_after) {
      return absl::InternalError("fake: access failed");
    }
    ++s_->accesses;
    return absl::OkStatus();
  }

 private:
  FakeState* s_;
};

std::unique_ptr<DeviceArena> MakeArena(FakeState* s, DeviceArenaOptions o) {
  auto arena = DeviceArena::Create(o, std::make_unique<FakeDriver>(s));
  EXPECT_TRUE(arena.ok()) << arena.status();
  return arena.ok() ? std::move(*arena) : nullptr;
}

TEST(DeviceArenaTest, TakesFirstRungWhenGranted) {
  FakeState s;
  DeviceArenaOptions o;
  o.reservation_ladder = {64 * kGiB, 1 * kGiB};
  auto arena = MakeArena(&s, o);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(arena->Stats().rung_index, 0);
  EXPECT_EQ(arena->Stats().reserved_bytes, 64 * kGiB);
  EXPECT_EQ(s.reserve_requests.size(), 1u);
}

TEST(DeviceArenaTest, DescendsLadderWhenRefused) {
  FakeState s;
  s.max_reservation = 5 * kGiB;
  DeviceArenaOptions o;
  o.reservation_ladder = {64 * kGiB, 16 * kGiB, 4 * kGiB, 1 * kGiB};
  auto arena = MakeArena(&s, o);
  ASSERT_NE(arena, nullptr);
  const DeviceArenaStats st = arena->Stats();
  EXPECT_EQ(st.rung_index, 2);
  EXPECT_EQ(st.reserved_bytes, 4 * kGiB);
  EXPECT_EQ(s.reserve_requests,
            (std::vector<size_t>{64 * kGiB, 16 * kGiB, 4 * kGiB}));
  EXPECT_EQ(s.reservations.size(), 1u);
}

TEST(DeviceArenaTest, RoundsRungsToGranularity) {
  FakeState s;
  DeviceArenaOptions o;
  o.reservation_ladder = {3 * kMiB + 1};
  auto arena = MakeArena(&s, o);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(arena->Stats().reserved_bytes, 4 * kMiB);
}

TEST(DeviceArenaTest, FailsWhenEveryRungRefused) {
  FakeState s;
  s.max_reservation = 100 * kMiB;
  DeviceArenaOptions o;
  o.reservation_ladder = {4 * kGiB, 1 * kGiB, 256 * kMiB};
  auto arena = DeviceArena::Create(o, std::make_unique<FakeDriver>(&s));
  ASSERT_FALSE(arena.ok());
  EXPECT_EQ(arena.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(arena.status().message(),
              HasSubstr("refused every address reservation"));
  EXPECT_THAT(arena.status().message(), HasSubstr("256.00 MiB"));
  EXPECT_EQ(s.reserve_requests.size(), 3u);
  EXPECT_TRUE(s.reservations.empty());
}

TEST(DeviceArenaTest, RejectsBadOptions) {
  FakeState s;
  DeviceArenaOptions o;
  o.reservation_ladder = {};
  EXPECT_EQ(
      DeviceArena::Create(o, std::make_unique<FakeDriver>(&s)).status().code(),
      absl::StatusCode::kInvalidArgument);
  o = DeviceArenaOptions();
  o.alignment = 384;
  EXPECT_EQ(
      DeviceArena::Create(o, std::make_unique<FakeDriver>(&s)).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DeviceArena::Create(DeviceArenaOptions(), nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DeviceArenaTest, MapsInGranularityPiecesOnDemand) {
  FakeState s;
  DeviceArenaOptions o;
  o.reservation_ladder = {1 * kGiB};
  auto arena = MakeArena(&s, o);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(arena->Stats().mapped_bytes, 0u);
  auto a = arena->Allocate(1000, "weights");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(arena->Stats().mapped_bytes, 2 * kMiB);
  EXPECT_EQ(s.maps, 1);
  auto b = arena->Allocate(5 * kMiB, "buffers");
  ASSERT_TRUE(b.ok());
  // 1024 + 5 MiB rounds up to 6 MiB mapped, in 2 MiB pieces.
  EXPECT_EQ(arena->Stats().mapped_bytes, 6 * kMiB);
  EXPECT_EQ(s.maps, 3);
  EXPECT_EQ(s.physical_in_use, 6 * kMiB);
  EXPECT_EQ(reinterpret_cast<uint64_t>(*a) % o.alignment, 0u);
  EXPECT_EQ(reinterpret_cast<uint64_t>(*b) % o.alignment, 0u);
}

TEST(DeviceArenaTest, NoSpillBudgetFailsWithResourceExhausted) {
  FakeState s;
  DeviceArenaOptions o;
  o.reservation_ladder = {1 * kGiB};
  o.budget_bytes = 10 * kMiB;
  auto arena = MakeArena(&s, o);
  ASSERT_NE(arena, nullptr);
  ASSERT_TRUE(arena->Allocate(8 * kMiB, "segmentation/weights").ok());
  const DeviceArenaStats before = arena->Stats();
  auto c = arena->Allocate(4 * kMiB, "embedding/activations");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(c.status().message(), HasSubstr("embedding/activations"));
  EXPECT_THAT(c.status().message(), HasSubstr("budget of 10.00 MiB"));
  EXPECT_THAT(c.status().message(), HasSubstr("segmentation/weights=8.00 MiB"));
  // Nothing changed and nothing was mapped past the budget.
  const DeviceArenaStats after = arena->Stats();
  EXPECT_EQ(after.used_bytes, before.used_bytes);
  EXPECT_EQ(after.mapped_bytes, before.mapped_bytes);
  EXPECT_EQ(after.failed_allocations, 1);
  EXPECT_LE(s.physical_in_use, o.budget_bytes);
  // What still fits, fits.
  EXPECT_TRUE(arena->Allocate(2 * kMiB, "embedding/activations").ok());
}

TEST(DeviceArenaTest, SpillModeMapsPastBudgetAndBooksIt) {
  FakeState s;
  DeviceArenaOptions o;
  o.reservation_ladder = {1 * kGiB};
  o.budget_bytes = 4 * kMiB;
  o.no_spill = false;
  auto arena = MakeArena(&s, o);
  ASSERT_NE(arena, nullptr);
  ASSERT_TRUE(arena->Allocate(7 * kMiB, "big").ok());
  const DeviceArenaStats st = arena->Stats();
  EXPECT_EQ(st.mapped_bytes, 8 * kMiB);
  EXPECT_EQ(st.spilled_bytes, 4 * kMiB);
  EXPECT_EQ(st.owners.at("big").used_bytes, 7 * kMiB);
}

TEST(DeviceArenaTest, ReservationExhaustionFails) {
  FakeState s;
  DeviceArenaOptions o;
  o.reservation_ladder = {8 * kMiB};
  o.no_spill = false;
  auto arena = MakeArena(&s, o);
  ASSERT_NE(arena, nullptr);
  ASSERT_TRUE(arena->Allocate(6 * kMiB, "a").ok());
  auto b = arena->Allocate(3 * kMiB, "b");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(b.status().message(), HasSubstr("no free range"));
}

TEST(DeviceArenaTest, PhysicalRefusalRollsBackThisCallsPieces) {
  FakeState s;
  s.physical_capacity = 6 * kMiB;
  DeviceArenaOptions o;
  o.reservation_ladder = {1 * kGiB};
  auto arena = MakeArena(&s, o);
  ASSERT_NE(arena, nullptr);
  ASSERT_TRUE(arena->Allocate(2 * kMiB, "a").ok());
  // Needs 4 more pieces; the driver grants 2 and refuses the third.
  auto b = arena->Allocate(8 * kMiB, "b");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(b.status().message(), HasSubstr("fake: out of physical memory"));
  EXPECT_EQ(arena->Stats().mapped_bytes, 2 * kMiB);
  EXPECT_EQ(s.physical_in_use, 2 * kMiB);
  EXPECT_EQ(s.handles.size(), 1u);
  EXPECT_EQ(s.mappings.size(), 1u);
  EXPECT_EQ(arena->Stats().owners.count("b")
                ? arena->Stats().owners.at("b").used_bytes
                : 0u,
            0u);
}

TEST(DeviceArenaTest, MapAndAccessFailuresRollBack) {
  for (int which = 0; which < 2; ++which) {
    FakeState s;
    if (which == 0)
      s.fail_map_after = 1;
    else
      s.fail_access_after = 1;
    DeviceArenaOptions o;
    o.reservation_ladder = {1 * kGiB};
    auto arena = MakeArena(&s, o);
    ASSERT_NE(arena, nullptr);
    ASSERT_TRUE(arena->Allocate(1 * kMiB, "a").ok());
    auto b = arena->Allocate(4 * kMiB, "b");
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(s.handles.size(), 1u) << which;
    EXPECT_EQ(s.mappings.size(), 1u) << which;
  }
}

TEST(DeviceArenaTest, DestructorReleasesEverything) {
  FakeState s;
  {
    DeviceArenaOptions o;
    o.reservation_ladder = {1 * kGiB};
    auto arena = MakeArena(&s, o);
    ASSERT_NE(arena, nullptr);
    ASSERT_TRUE(arena->Allocate(5 * kMiB, "a").ok());
    ASSERT_TRUE(arena->Allocate(3 * kMiB, "b").ok());
    EXPECT_FALSE(s.handles.empty());
  }
  EXPECT_TRUE(s.handles.empty());
  EXPECT_TRUE(s.mappings.empty());
  EXPECT_TRUE(s.reservations.empty());
  EXPECT_EQ(s.physical_in_use, 0u);
}

TEST(DeviceArenaTest, FreeErrors) {
  FakeState s;
  DeviceArenaOptions o;
  o.reservation_ladder = {1 * kGiB};
  auto arena = MakeArena(&s, o);
  ASSERT_NE(arena, nullptr);
  auto a = arena->Allocate(1 * kMiB, "a");
  auto b = arena->Allocate(6 * kMiB, "b");
  ASSERT_TRUE(a.ok() && b.ok());
  int local = 0;
  EXPECT_EQ(arena->Free(&local).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(arena->Free(static_cast<char*>(*a) + 256).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(arena->Free(*b).ok());
  EXPECT_EQ(arena->Free(*b).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(arena->Stats().mapped_bytes, 8 * kMiB);
  EXPECT_EQ(arena->Allocate(0, "a").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(arena->Allocate(8, "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DeviceArenaTest, ExternalBookings) {
  FakeState s;
  DeviceArenaOptions o;
  o.reservation_ladder = {1 * kGiB};
  auto arena = MakeArena(&s, o);
  ASSERT_NE(arena, nullptr);
  arena->RecordExternal("cudnn_handle", 1000);
  arena->RecordExternal("cublas_handle", 24);
  arena->RecordExternal("cudnn_handle", 500);
  const DeviceArenaStats st = arena->Stats();
  EXPECT_EQ(st.external_bytes, 524u);
  EXPECT_EQ(st.external.at("cudnn_handle"), 500u);
  EXPECT_THAT(arena->DebugString(), HasSubstr("cublas_handle"));
}

TEST(DeviceArenaTest, LiveAllocationSizesPerOwner) {
  FakeState s;
  DeviceArenaOptions o;
  o.reservation_ladder = {1 * kGiB};
  o.alignment = 256;
  auto arena = MakeArena(&s, o);
  ASSERT_NE(arena, nullptr);
  std::mt19937 rng(std::random_device{}());
  std::map<std::string, std::vector<size_t>> expected;
  std::vector<void*> freed;
  for (int i = 0; i < 20; ++i) {
    const std::string owner = i % 3 == 0 ? "seg" : "emb";
    const size_t bytes = 1 + rng() % (3 * kMiB);
    auto p = arena->Allocate(bytes, owner);
    ASSERT_TRUE(p.ok()) << p.status();
    if (i % 4 == 1) {
      freed.push_back(*p);  // freed below: not listed
    } else {
      expected[owner].push_back((bytes + 255) / 256 * 256);
    }
  }
  for (void* p : freed) ASSERT_TRUE(arena->Free(p).ok());
  for (auto& [owner, v] : expected) {
    std::sort(v.begin(), v.end(), std::greater<>());
  }
  EXPECT_EQ(arena->LiveAllocationSizes(), expected);
}

// Random allocate/free sequences against an independent tally: live blocks
// never overlap, stay inside the reservation and aligned, the per-owner
// ledger matches, and the mapping covers every live byte.
TEST(DeviceArenaTest, RandomSequencesKeepLedgerExact) {
  std::random_device rd;
  const unsigned seed = rd();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  FakeState s;
  s.granularity = 64 * 1024;
  DeviceArenaOptions o;
  o.reservation_ladder = {256 * kMiB};
  o.budget_bytes = 64 * kMiB;
  o.alignment = 512;
  auto arena = MakeArena(&s, o);
  ASSERT_NE(arena, nullptr);
  const uint64_t base = s.reservations.begin()->first;
  const std::vector<std::string> owners = {"seg", "emb", "fbank", "graph"};
  struct Block {
    uint64_t addr;
    size_t size;
    std::string owner;
  };
  std::vector<Block> live;
  std::map<std::string, size_t> tally;
  size_t peak = 0, used = 0;
  for (int step = 0; step < 3000; ++step) {
    if (!live.empty() && (rng() % 100) < 45) {
      const size_t i = rng() % live.size();
      ASSERT_TRUE(arena->Free(reinterpret_cast<void*>(live[i].addr)).ok());
      tally[live[i].owner] -= live[i].size;
      used -= live[i].size;
      live.erase(live.begin() + i);
    } else {
      const size_t bytes = 1 + rng() % (2 * kMiB);
      const std::string& owner = owners[rng() % owners.size()];
      auto p = arena->Allocate(bytes, owner);
      const size_t aligned = (bytes + 511) / 512 * 512;
      if (!p.ok()) {
        ASSERT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
        continue;
      }
      const uint64_t addr = reinterpret_cast<uint64_t>(*p);
      ASSERT_EQ(addr % 512, 0u);
      ASSERT_GE(addr, base);
      ASSERT_LE(addr + aligned, base + 256 * kMiB);
      for (const Block& b : live) {
        ASSERT_TRUE(addr + aligned <= b.addr || b.addr + b.size <= addr);
      }
      live.push_back({addr, aligned, owner});
      tally[owner] += aligned;
      used += aligned;
      peak = std::max(peak, used);
    }
    const DeviceArenaStats st = arena->Stats();
    ASSERT_EQ(st.used_bytes, used);
    ASSERT_LE(st.mapped_bytes, o.budget_bytes);
    ASSERT_EQ(st.mapped_bytes, s.physical_in_use);
    for (const Block& b : live)
      ASSERT_LE(b.addr + b.size, base + st.mapped_bytes);
    for (const auto& [owner, bytes] : tally) {
      const size_t got =
          st.owners.count(owner) ? st.owners.at(owner).used_bytes : 0;
      ASSERT_EQ(got, bytes) << owner;
    }
  }
  EXPECT_EQ(arena->Stats().peak_used_bytes, peak);
  // Freeing everything coalesces back to one range: a reservation-sized
  // allocation (within budget) succeeds at the base.
  for (const Block& b : live)
    ASSERT_TRUE(arena->Free(reinterpret_cast<void*>(b.addr)).ok());
  auto whole = arena->Allocate(o.budget_bytes, "whole");
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(reinterpret_cast<uint64_t>(*whole), base);
}

}  // namespace
}  // namespace diarization::models
