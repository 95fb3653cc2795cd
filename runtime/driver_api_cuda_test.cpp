// Our CUDA driver declarations (driver_api_cuda.h) against the toolkit's cuda.h: every entry point
// has the same ABI signature as the symbol it is bound to, and every constant the same value.
// Built only where cuda.h is installed; the runtime itself never includes it.
#include "runtime/driver_api_cuda.h"  // first: cuda.h defines macros our names would collide with

#include <cuda.h>

#include <cstddef>

#include "gtest/gtest.h"
#include "runtime/abi_signature.h"

namespace monotile::runtime {
namespace {

namespace api = cuda_api;
using testing::same_abi;

#define MT_EXPECT_SAME_ABI(ours, symbol) \
  static_assert(same_abi<api::ours, decltype(&::symbol)>(), #symbol " differs from cuda.h")

MT_EXPECT_SAME_ABI(PFN_cuGetErrorName, cuGetErrorName);
MT_EXPECT_SAME_ABI(PFN_cuInit, cuInit);
MT_EXPECT_SAME_ABI(PFN_cuDriverGetVersion, cuDriverGetVersion);
MT_EXPECT_SAME_ABI(PFN_cuDeviceGetCount, cuDeviceGetCount);
MT_EXPECT_SAME_ABI(PFN_cuDeviceGet, cuDeviceGet);
MT_EXPECT_SAME_ABI(PFN_cuDeviceGetName, cuDeviceGetName);
MT_EXPECT_SAME_ABI(PFN_cuDeviceGetAttribute, cuDeviceGetAttribute);
MT_EXPECT_SAME_ABI(PFN_cuDeviceTotalMem_v2, cuDeviceTotalMem_v2);
MT_EXPECT_SAME_ABI(PFN_cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
MT_EXPECT_SAME_ABI(PFN_cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease_v2);
MT_EXPECT_SAME_ABI(PFN_cuCtxSetCurrent, cuCtxSetCurrent);
MT_EXPECT_SAME_ABI(PFN_cuCtxSynchronize, cuCtxSynchronize);
MT_EXPECT_SAME_ABI(PFN_cuMemAlloc_v2, cuMemAlloc_v2);
MT_EXPECT_SAME_ABI(PFN_cuMemFree_v2, cuMemFree_v2);
MT_EXPECT_SAME_ABI(PFN_cuMemHostAlloc, cuMemHostAlloc);
MT_EXPECT_SAME_ABI(PFN_cuMemHostGetDevicePointer_v2, cuMemHostGetDevicePointer_v2);
MT_EXPECT_SAME_ABI(PFN_cuMemFreeHost, cuMemFreeHost);
MT_EXPECT_SAME_ABI(PFN_cuMemcpyHtoD_v2, cuMemcpyHtoD_v2);
MT_EXPECT_SAME_ABI(PFN_cuMemcpyDtoH_v2, cuMemcpyDtoH_v2);
MT_EXPECT_SAME_ABI(PFN_cuMemcpyDtoD_v2, cuMemcpyDtoD_v2);
MT_EXPECT_SAME_ABI(PFN_cuMemsetD8_v2, cuMemsetD8_v2);
MT_EXPECT_SAME_ABI(PFN_cuIpcGetMemHandle, cuIpcGetMemHandle);
MT_EXPECT_SAME_ABI(PFN_cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle_v2);
MT_EXPECT_SAME_ABI(PFN_cuIpcCloseMemHandle, cuIpcCloseMemHandle);
static_assert(sizeof(api::CUipcMemHandle) == sizeof(::CUipcMemHandle));
static_assert(api::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS == ::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
MT_EXPECT_SAME_ABI(PFN_cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2);
MT_EXPECT_SAME_ABI(PFN_cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2);
MT_EXPECT_SAME_ABI(PFN_cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2);
MT_EXPECT_SAME_ABI(PFN_cuMemsetD8Async, cuMemsetD8Async);
MT_EXPECT_SAME_ABI(PFN_cuStreamCreate, cuStreamCreate);
MT_EXPECT_SAME_ABI(PFN_cuStreamDestroy_v2, cuStreamDestroy_v2);
MT_EXPECT_SAME_ABI(PFN_cuStreamSynchronize, cuStreamSynchronize);
MT_EXPECT_SAME_ABI(PFN_cuEventCreate, cuEventCreate);
MT_EXPECT_SAME_ABI(PFN_cuEventDestroy_v2, cuEventDestroy_v2);
MT_EXPECT_SAME_ABI(PFN_cuEventRecord, cuEventRecord);
MT_EXPECT_SAME_ABI(PFN_cuEventSynchronize, cuEventSynchronize);
MT_EXPECT_SAME_ABI(PFN_cuEventElapsedTime, cuEventElapsedTime_v2);
MT_EXPECT_SAME_ABI(PFN_cuModuleLoadData, cuModuleLoadData);
MT_EXPECT_SAME_ABI(PFN_cuModuleUnload, cuModuleUnload);
MT_EXPECT_SAME_ABI(PFN_cuModuleGetFunction, cuModuleGetFunction);
MT_EXPECT_SAME_ABI(PFN_cuFuncSetAttribute, cuFuncSetAttribute);
MT_EXPECT_SAME_ABI(PFN_cuLaunchKernel, cuLaunchKernel);
MT_EXPECT_SAME_ABI(PFN_cuLaunchKernelEx, cuLaunchKernelEx);
static_assert(api::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION ==
              ::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
static_assert(sizeof(api::CUlaunchAttributeID) == sizeof(::CUlaunchAttributeID));
static_assert(sizeof(api::CUlaunchAttributeValue) == sizeof(::CUlaunchAttributeValue));
static_assert(sizeof(api::CUlaunchAttribute) == sizeof(::CUlaunchAttribute));
static_assert(offsetof(api::CUlaunchAttribute, value) == offsetof(::CUlaunchAttribute, value));
static_assert(offsetof(api::CUlaunchAttributeValue, programmaticStreamSerializationAllowed) ==
              offsetof(::CUlaunchAttributeValue, programmaticStreamSerializationAllowed));
static_assert(sizeof(api::CUlaunchConfig) == sizeof(::CUlaunchConfig));
static_assert(offsetof(api::CUlaunchConfig, sharedMemBytes) == offsetof(::CUlaunchConfig, sharedMemBytes));
static_assert(offsetof(api::CUlaunchConfig, hStream) == offsetof(::CUlaunchConfig, hStream));
static_assert(offsetof(api::CUlaunchConfig, attrs) == offsetof(::CUlaunchConfig, attrs));
static_assert(offsetof(api::CUlaunchConfig, numAttrs) == offsetof(::CUlaunchConfig, numAttrs));
MT_EXPECT_SAME_ABI(PFN_cuStreamBeginCapture_v2, cuStreamBeginCapture_v2);
MT_EXPECT_SAME_ABI(PFN_cuStreamEndCapture, cuStreamEndCapture);
MT_EXPECT_SAME_ABI(PFN_cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags);
MT_EXPECT_SAME_ABI(PFN_cuGraphLaunch, cuGraphLaunch);
MT_EXPECT_SAME_ABI(PFN_cuGraphExecDestroy, cuGraphExecDestroy);
MT_EXPECT_SAME_ABI(PFN_cuGraphDestroy, cuGraphDestroy);

#undef MT_EXPECT_SAME_ABI

static_assert(sizeof(api::CUdeviceptr) == sizeof(::CUdeviceptr));
static_assert(sizeof(api::CUdevice) == sizeof(::CUdevice));
static_assert(api::CUDA_SUCCESS == ::CUDA_SUCCESS);
static_assert(api::CUDA_ERROR_INVALID_VALUE == ::CUDA_ERROR_INVALID_VALUE);
static_assert(api::CUDA_ERROR_OUT_OF_MEMORY == ::CUDA_ERROR_OUT_OF_MEMORY);
static_assert(api::CUDA_ERROR_NOT_INITIALIZED == ::CUDA_ERROR_NOT_INITIALIZED);
static_assert(api::CUDA_ERROR_NO_DEVICE == ::CUDA_ERROR_NO_DEVICE);
static_assert(api::CUDA_ERROR_NOT_FOUND == ::CUDA_ERROR_NOT_FOUND);
static_assert(api::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK == ::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
static_assert(api::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == ::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
static_assert(api::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY == ::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
static_assert(api::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(api::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(api::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN == ::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
static_assert(api::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES == ::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
static_assert(api::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL == ::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
static_assert(api::kMemHostAllocPortable == CU_MEMHOSTALLOC_PORTABLE);
static_assert(api::kMemHostAllocDeviceMap == CU_MEMHOSTALLOC_DEVICEMAP);
static_assert(api::CU_STREAM_NON_BLOCKING == ::CU_STREAM_NON_BLOCKING);
static_assert(api::CU_EVENT_DEFAULT == ::CU_EVENT_DEFAULT);

// The checks above are compile-time; this records that they ran, and that the helper can fail.
TEST(CudaDriverApi, MatchesCudaHeader) {
  using Narrow = int (*)(unsigned int*);
  using Wide = int (*)(unsigned long long*);
  EXPECT_FALSE((same_abi<Narrow, Wide>()));
  EXPECT_TRUE((same_abi<api::PFN_cuMemAlloc_v2, decltype(&::cuMemAlloc_v2)>()));
  EXPECT_FALSE((same_abi<api::PFN_cuMemAlloc_v2, decltype(&::cuMemFree_v2)>()));
}

}  // namespace
}  // namespace monotile::runtime
