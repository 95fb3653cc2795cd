// Our HIP runtime declarations (driver_api_hip.h) against the installed hip_runtime_api.h (HIP 5
// here): entry-point ABI signatures, constants, and the R0000 hipDeviceProp_t offsets we read.
// The R0600 offsets come from ROCm 6's header (offsetof in a compiled probe) and are checked on
// an AMD GPU by the gcnArchName validation in device_hip.cpp.
#include "runtime/driver_api_hip.h"  // first: the HIP header defines macros our names would hit

#include <hip/hip_runtime_api.h>
#include <hip/hip_version.h>

#include <cstddef>

#include "gtest/gtest.h"
#include "runtime/abi_signature.h"

namespace monotile::runtime {
namespace {

namespace api = hip_api;
using testing::same_abi;

#define MT_EXPECT_SAME_ABI(ours, symbol) \
  static_assert(same_abi<api::ours, decltype(&::symbol)>(), #symbol " differs from hip_runtime_api.h")

MT_EXPECT_SAME_ABI(PFN_hipGetErrorName, hipGetErrorName);
MT_EXPECT_SAME_ABI(PFN_hipInit, hipInit);
MT_EXPECT_SAME_ABI(PFN_hipDriverGetVersion, hipDriverGetVersion);
MT_EXPECT_SAME_ABI(PFN_hipRuntimeGetVersion, hipRuntimeGetVersion);
MT_EXPECT_SAME_ABI(PFN_hipGetDeviceCount, hipGetDeviceCount);
MT_EXPECT_SAME_ABI(PFN_hipSetDevice, hipSetDevice);
MT_EXPECT_SAME_ABI(PFN_hipDeviceGetName, hipDeviceGetName);
MT_EXPECT_SAME_ABI(PFN_hipDeviceTotalMem, hipDeviceTotalMem);
MT_EXPECT_SAME_ABI(PFN_hipGetDeviceProperties, hipGetDeviceProperties);
MT_EXPECT_SAME_ABI(PFN_hipDeviceSynchronize, hipDeviceSynchronize);
// hipMalloc and hipHostMalloc have C++ template overloads: pick the C entry point by signature.
static_assert(same_abi<api::PFN_hipMalloc,
                       decltype(static_cast<hipError_t (*)(void**, size_t)>(&::hipMalloc))>());
MT_EXPECT_SAME_ABI(PFN_hipFree, hipFree);
static_assert(
    same_abi<api::PFN_hipHostMalloc,
             decltype(static_cast<hipError_t (*)(void**, size_t, unsigned)>(&::hipHostMalloc))>());
MT_EXPECT_SAME_ABI(PFN_hipHostGetDevicePointer, hipHostGetDevicePointer);
MT_EXPECT_SAME_ABI(PFN_hipHostFree, hipHostFree);
MT_EXPECT_SAME_ABI(PFN_hipMemcpyHtoD, hipMemcpyHtoD);
MT_EXPECT_SAME_ABI(PFN_hipMemcpyDtoH, hipMemcpyDtoH);
MT_EXPECT_SAME_ABI(PFN_hipMemcpyDtoD, hipMemcpyDtoD);
MT_EXPECT_SAME_ABI(PFN_hipMemsetD8, hipMemsetD8);
MT_EXPECT_SAME_ABI(PFN_hipMemcpyHtoDAsync, hipMemcpyHtoDAsync);
MT_EXPECT_SAME_ABI(PFN_hipMemcpyDtoHAsync, hipMemcpyDtoHAsync);
MT_EXPECT_SAME_ABI(PFN_hipMemcpyDtoDAsync, hipMemcpyDtoDAsync);
MT_EXPECT_SAME_ABI(PFN_hipMemsetD8Async, hipMemsetD8Async);
MT_EXPECT_SAME_ABI(PFN_hipStreamCreateWithFlags, hipStreamCreateWithFlags);
MT_EXPECT_SAME_ABI(PFN_hipStreamDestroy, hipStreamDestroy);
MT_EXPECT_SAME_ABI(PFN_hipStreamSynchronize, hipStreamSynchronize);
MT_EXPECT_SAME_ABI(PFN_hipEventCreate, hipEventCreate);
MT_EXPECT_SAME_ABI(PFN_hipEventDestroy, hipEventDestroy);
MT_EXPECT_SAME_ABI(PFN_hipEventRecord, hipEventRecord);
MT_EXPECT_SAME_ABI(PFN_hipEventSynchronize, hipEventSynchronize);
MT_EXPECT_SAME_ABI(PFN_hipEventElapsedTime, hipEventElapsedTime);
MT_EXPECT_SAME_ABI(PFN_hipModuleLoadData, hipModuleLoadData);
MT_EXPECT_SAME_ABI(PFN_hipModuleUnload, hipModuleUnload);
MT_EXPECT_SAME_ABI(PFN_hipModuleGetFunction, hipModuleGetFunction);
MT_EXPECT_SAME_ABI(PFN_hipModuleLaunchKernel, hipModuleLaunchKernel);
MT_EXPECT_SAME_ABI(PFN_hipStreamBeginCapture, hipStreamBeginCapture);
MT_EXPECT_SAME_ABI(PFN_hipStreamEndCapture, hipStreamEndCapture);
MT_EXPECT_SAME_ABI(PFN_hipGraphInstantiateWithFlags, hipGraphInstantiateWithFlags);
MT_EXPECT_SAME_ABI(PFN_hipGraphLaunch, hipGraphLaunch);
MT_EXPECT_SAME_ABI(PFN_hipGraphExecDestroy, hipGraphExecDestroy);
MT_EXPECT_SAME_ABI(PFN_hipGraphDestroy, hipGraphDestroy);
MT_EXPECT_SAME_ABI(PFN_hipIpcGetMemHandle, hipIpcGetMemHandle);
MT_EXPECT_SAME_ABI(PFN_hipIpcOpenMemHandle, hipIpcOpenMemHandle);
MT_EXPECT_SAME_ABI(PFN_hipIpcCloseMemHandle, hipIpcCloseMemHandle);
static_assert(sizeof(api::hipIpcMemHandle_t) == sizeof(::hipIpcMemHandle_t));
static_assert(HIP_VERSION_MAJOR >= 6
                  ? api::kIpcMemLazyEnablePeerAccessHip6 == hipIpcMemLazyEnablePeerAccess
                  : api::kIpcMemLazyEnablePeerAccessHip5 == hipIpcMemLazyEnablePeerAccess);

#undef MT_EXPECT_SAME_ABI

static_assert(api::hipSuccess == ::hipSuccess);
static_assert(api::hipErrorInvalidValue == ::hipErrorInvalidValue);
static_assert(api::hipErrorOutOfMemory == ::hipErrorOutOfMemory);
static_assert(api::hipErrorNoDevice == ::hipErrorNoDevice);
static_assert(api::hipErrorInvalidDevice == ::hipErrorInvalidDevice);
static_assert(api::hipErrorNotFound == ::hipErrorNotFound);
static_assert(api::kHostMallocMapped == hipHostMallocMapped);
static_assert(api::kHostMallocPortable == hipHostMallocPortable);
static_assert(api::kStreamNonBlocking == hipStreamNonBlocking);
static_assert(api::hipStreamCaptureModeThreadLocal == ::hipStreamCaptureModeThreadLocal);

// HIP 5's hipDeviceProp_t is the R0000 layout.
static_assert(api::kDevicePropR0000.total_global_mem == offsetof(hipDeviceProp_t, totalGlobalMem));
static_assert(api::kDevicePropR0000.shared_mem_per_block ==
              offsetof(hipDeviceProp_t, sharedMemPerBlock));
static_assert(api::kDevicePropR0000.multi_processor_count ==
              offsetof(hipDeviceProp_t, multiProcessorCount));
static_assert(api::kDevicePropR0000.gcn_arch_name == offsetof(hipDeviceProp_t, gcnArchName));
static_assert(api::kDevicePropR0000.size == sizeof(hipDeviceProp_t));
static_assert(api::kDevicePropBufferBytes >= api::kDevicePropR0600.size);

TEST(HipDriverApi, MatchesHipHeader) {
  EXPECT_TRUE((same_abi<api::PFN_hipModuleLaunchKernel, decltype(&::hipModuleLaunchKernel)>()));
  EXPECT_FALSE((same_abi<api::PFN_hipMemsetD8, decltype(&::hipMemcpyHtoD)>()));
}

}  // namespace
}  // namespace monotile::runtime
