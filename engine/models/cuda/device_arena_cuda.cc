#include "engine/models/cuda/device_arena_cuda.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"

namespace diarization::models {
namespace {

// Driver API version whose signatures the pointers below follow.
constexpr unsigned int kDriverApiVersion = 12000;

using GetAttributeFn = CUresult (*)(int*, CUdevice_attribute, CUdevice);
using GetErrorStringFn = CUresult (*)(CUresult, const char**);
using GranularityFn = CUresult (*)(size_t*, const CUmemAllocationProp*,
                                   CUmemAllocationGranularity_flags);
using ReserveFn = CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr,
                               unsigned long long);
using AddressFreeFn = CUresult (*)(CUdeviceptr, size_t);
using CreateFn = CUresult (*)(CUmemGenericAllocationHandle*, size_t,
                              const CUmemAllocationProp*, unsigned long long);
using ReleaseFn = CUresult (*)(CUmemGenericAllocationHandle);
using MapFn = CUresult (*)(CUdeviceptr, size_t, size_t,
                           CUmemGenericAllocationHandle, unsigned long long);
using UnmapFn = CUresult (*)(CUdeviceptr, size_t);
using SetAccessFn = CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*,
                                 size_t);

template <typename Fn>
absl::Status Lookup(const char* symbol, Fn* fn) {
  void* ptr = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t err = cudaGetDriverEntryPointByVersion(
      symbol, &ptr, kDriverApiVersion, cudaEnableDefault, &query);
  if (err != cudaSuccess || query != cudaDriverEntryPointSuccess ||
      ptr == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "CUDA driver entry point ", symbol, " not found (",
        cudaGetErrorString(err), ", query result ", static_cast<int>(query),
        "); is an NVIDIA driver >= 12.0 installed?"));
  }
  *fn = reinterpret_cast<Fn>(ptr);
  return absl::OkStatus();
}

class CudaVmmDriver : public VmmDriver {
 public:
  absl::Status Init(int device) {
    RETURN_IF_ERROR(Lookup("cuGetErrorString", &get_error_string_));
    RETURN_IF_ERROR(Lookup("cuMemGetAllocationGranularity", &granularity_));
    RETURN_IF_ERROR(Lookup("cuMemAddressReserve", &reserve_));
    RETURN_IF_ERROR(Lookup("cuMemAddressFree", &address_free_));
    RETURN_IF_ERROR(Lookup("cuMemCreate", &create_));
    RETURN_IF_ERROR(Lookup("cuMemRelease", &release_));
    RETURN_IF_ERROR(Lookup("cuMemMap", &map_));
    RETURN_IF_ERROR(Lookup("cuMemUnmap", &unmap_));
    RETURN_IF_ERROR(Lookup("cuMemSetAccess", &set_access_));
    RETURN_IF_ERROR(Lookup("cuDeviceGetAttribute", &get_attribute_));
    int supported = 0;
    RETURN_IF_ERROR(Check(
        get_attribute_(&supported,
                       CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                       device),
        "cuDeviceGetAttribute(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)"));
    if (!supported) {
      return absl::FailedPreconditionError(
          absl::StrCat("device ", device,
                       " does not support CUDA virtual memory management"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<size_t> Granularity(int device) override {
    CUmemAllocationProp prop = Prop(device);
    size_t g = 0;
    RETURN_IF_ERROR(
        Check(granularity_(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              "cuMemGetAllocationGranularity"));
    return g;
  }
  absl::StatusOr<uint64_t> Reserve(size_t size, size_t alignment) override {
    CUdeviceptr ptr = 0;
    RETURN_IF_ERROR(Check(reserve_(&ptr, size, alignment, 0, 0),
                          absl::StrCat("cuMemAddressReserve(", size, ")")));
    return static_cast<uint64_t>(ptr);
  }
  absl::Status FreeReservation(uint64_t base, size_t size) override {
    return Check(address_free_(base, size), "cuMemAddressFree");
  }
  absl::StatusOr<uint64_t> CreatePhysical(size_t size, int device) override {
    CUmemAllocationProp prop = Prop(device);
    CUmemGenericAllocationHandle handle = 0;
    RETURN_IF_ERROR(Check(create_(&handle, size, &prop, 0),
                          absl::StrCat("cuMemCreate(", size, ")")));
    return static_cast<uint64_t>(handle);
  }
  absl::Status ReleasePhysical(uint64_t handle) override {
    return Check(release_(handle), "cuMemRelease");
  }
  absl::Status Map(uint64_t va, size_t size, uint64_t handle) override {
    return Check(map_(va, size, 0, handle, 0), "cuMemMap");
  }
  absl::Status Unmap(uint64_t va, size_t size) override {
    return Check(unmap_(va, size), "cuMemUnmap");
  }
  absl::Status SetAccess(uint64_t va, size_t size, int device) override {
    CUmemAccessDesc desc = {};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = device;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return Check(set_access_(va, size, &desc, 1), "cuMemSetAccess");
  }

 private:
  static CUmemAllocationProp Prop(int device) {
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return prop;
  }
  absl::Status Check(CUresult r, const std::string& what) {
    if (r == CUDA_SUCCESS) return absl::OkStatus();
    const char* msg = nullptr;
    if (get_error_string_ == nullptr ||
        get_error_string_(r, &msg) != CUDA_SUCCESS || msg == nullptr) {
      msg = "unknown CUDA driver error";
    }
    std::string text =
        absl::StrCat(what, " failed: ", msg, " (", static_cast<int>(r), ")");
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      return absl::ResourceExhaustedError(text);
    return absl::InternalError(text);
  }

  GetErrorStringFn get_error_string_ = nullptr;
  GetAttributeFn get_attribute_ = nullptr;
  GranularityFn granularity_ = nullptr;
  ReserveFn reserve_ = nullptr;
  AddressFreeFn address_free_ = nullptr;
  CreateFn create_ = nullptr;
  ReleaseFn release_ = nullptr;
  MapFn map_ = nullptr;
  UnmapFn unmap_ = nullptr;
  SetAccessFn set_access_ = nullptr;
};

}  // namespace

absl::StatusOr<std::unique_ptr<VmmDriver>> CreateCudaVmmDriver(int device) {
  // cudaSetDevice + cudaFree(0) make the primary context current, which the
  // cuMem* calls need.
  cudaError_t err = cudaSetDevice(device);
  if (err == cudaSuccess) err = cudaFree(nullptr);
  if (err != cudaSuccess) {
    return absl::FailedPreconditionError(absl::StrCat(
        "CUDA device ", device, " is not usable: ", cudaGetErrorString(err)));
  }
  auto driver = std::make_unique<CudaVmmDriver>();
  RETURN_IF_ERROR(driver->Init(device));
  return std::unique_ptr<VmmDriver>(std::move(driver));
}

absl::StatusOr<std::unique_ptr<DeviceArena>> CreateCudaDeviceArena(
    const DeviceArenaOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<VmmDriver> driver,
                   CreateCudaVmmDriver(options.device));
  return DeviceArena::Create(options, std::move(driver));
}

}  // namespace diarization::models
