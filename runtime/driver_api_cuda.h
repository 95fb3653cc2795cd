// The few CUDA driver API types, constants and entry-point signatures the CUDA device uses,
// declared here so that building needs no CUDA SDK (the driver is dlopen'ed at run time).
// Values and signatures are those of cuda.h (CUDA 12/13); driver_api_cuda_test.cpp checks each
// signature against the real header where the toolkit is installed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace monotile::runtime::cuda_api {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUgraph = CUgraph_st*;
using CUgraphExec = CUgraphExec_st*;
using CUdevice_attribute = int;
using CUfunction_attribute = int;
using CUstreamCaptureMode = int;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;

constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
// cuda.h spells these two as macros (CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_DEVICEMAP).
constexpr unsigned kMemHostAllocPortable = 0x01;
constexpr unsigned kMemHostAllocDeviceMap = 0x02;
constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
// Another process's buffer (cuda.h: CUipcMemHandle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS).
struct CUipcMemHandle {
  char reserved[64];
};
constexpr unsigned CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1;
constexpr unsigned CU_EVENT_DEFAULT = 0x0;
// cuLaunchKernelEx's configuration, with the one attribute we set: programmatic stream
// serialization, which lets a kernel that waits for its grid dependency (griddepcontrol.wait) start
// before the previous kernel on its stream has ended.
using CUlaunchAttributeID = int;
constexpr CUlaunchAttributeID CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
union CUlaunchAttributeValue {
  char pad[64];
  int programmaticStreamSerializationAllowed;
};
struct CUlaunchAttribute {
  CUlaunchAttributeID id;
  char pad[8 - sizeof(CUlaunchAttributeID)];
  CUlaunchAttributeValue value;
};
struct CUlaunchConfig {
  unsigned gridDimX;
  unsigned gridDimY;
  unsigned gridDimZ;
  unsigned blockDimX;
  unsigned blockDimY;
  unsigned blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned numAttrs;
};

// Entry points, named after the exact exported symbol (the _v2 ABI where one exists).
using PFN_cuGetErrorName = CUresult (*)(CUresult error, const char** name);
using PFN_cuInit = CUresult (*)(unsigned flags);
using PFN_cuDriverGetVersion = CUresult (*)(int* version);
using PFN_cuDeviceGetCount = CUresult (*)(int* count);
using PFN_cuDeviceGet = CUresult (*)(CUdevice* device, int ordinal);
using PFN_cuDeviceGetName = CUresult (*)(char* name, int length, CUdevice device);
using PFN_cuDeviceGetAttribute = CUresult (*)(int* value, CUdevice_attribute attribute,
                                              CUdevice device);
using PFN_cuDeviceTotalMem_v2 = CUresult (*)(size_t* bytes, CUdevice device);
using PFN_cuDevicePrimaryCtxRetain = CUresult (*)(CUcontext* context, CUdevice device);
using PFN_cuDevicePrimaryCtxRelease_v2 = CUresult (*)(CUdevice device);
using PFN_cuCtxSetCurrent = CUresult (*)(CUcontext context);
using PFN_cuCtxSynchronize = CUresult (*)();
using PFN_cuMemAlloc_v2 = CUresult (*)(CUdeviceptr* address, size_t bytes);
using PFN_cuMemFree_v2 = CUresult (*)(CUdeviceptr address);
using PFN_cuMemHostAlloc = CUresult (*)(void** host, size_t bytes, unsigned flags);
using PFN_cuMemHostGetDevicePointer_v2 = CUresult (*)(CUdeviceptr* address, void* host,
                                                      unsigned flags);
using PFN_cuMemFreeHost = CUresult (*)(void* host);
using PFN_cuMemcpyHtoD_v2 = CUresult (*)(CUdeviceptr destination, const void* source,
                                         size_t bytes);
using PFN_cuMemcpyDtoH_v2 = CUresult (*)(void* destination, CUdeviceptr source, size_t bytes);
using PFN_cuMemcpyDtoD_v2 = CUresult (*)(CUdeviceptr destination, CUdeviceptr source,
                                         size_t bytes);
using PFN_cuMemsetD8_v2 = CUresult (*)(CUdeviceptr destination, unsigned char value,
                                       size_t count);
using PFN_cuMemcpyHtoDAsync_v2 = CUresult (*)(CUdeviceptr destination, const void* source,
                                              size_t bytes, CUstream stream);
using PFN_cuMemcpyDtoHAsync_v2 = CUresult (*)(void* destination, CUdeviceptr source,
                                              size_t bytes, CUstream stream);
using PFN_cuMemcpyDtoDAsync_v2 = CUresult (*)(CUdeviceptr destination, CUdeviceptr source,
                                              size_t bytes, CUstream stream);
using PFN_cuMemsetD8Async = CUresult (*)(CUdeviceptr destination, unsigned char value,
                                         size_t count, CUstream stream);
using PFN_cuStreamCreate = CUresult (*)(CUstream* stream, unsigned flags);
using PFN_cuStreamDestroy_v2 = CUresult (*)(CUstream stream);
using PFN_cuStreamSynchronize = CUresult (*)(CUstream stream);
using PFN_cuEventCreate = CUresult (*)(CUevent* event, unsigned flags);
using PFN_cuEventDestroy_v2 = CUresult (*)(CUevent event);
using PFN_cuEventRecord = CUresult (*)(CUevent event, CUstream stream);
using PFN_cuEventSynchronize = CUresult (*)(CUevent event);
using PFN_cuEventElapsedTime = CUresult (*)(float* milliseconds, CUevent start, CUevent end);
using PFN_cuModuleLoadData = CUresult (*)(CUmodule* module, const void* image);
using PFN_cuModuleUnload = CUresult (*)(CUmodule module);
using PFN_cuModuleGetFunction = CUresult (*)(CUfunction* function, CUmodule module,
                                             const char* name);
using PFN_cuFuncSetAttribute = CUresult (*)(CUfunction function, CUfunction_attribute attribute,
                                            int value);
using PFN_cuLaunchKernel = CUresult (*)(CUfunction function, unsigned grid_x, unsigned grid_y,
                                        unsigned grid_z, unsigned block_x, unsigned block_y,
                                        unsigned block_z, unsigned shared_memory_bytes,
                                        CUstream stream, void** params, void** extra);
using PFN_cuLaunchKernelEx = CUresult (*)(const CUlaunchConfig* config, CUfunction function, void** params,
                                          void** extra);
using PFN_cuStreamBeginCapture_v2 = CUresult (*)(CUstream stream, CUstreamCaptureMode mode);
using PFN_cuStreamEndCapture = CUresult (*)(CUstream stream, CUgraph* graph);
using PFN_cuGraphInstantiateWithFlags = CUresult (*)(CUgraphExec* exec, CUgraph graph,
                                                     unsigned long long flags);
using PFN_cuGraphLaunch = CUresult (*)(CUgraphExec exec, CUstream stream);
using PFN_cuGraphExecDestroy = CUresult (*)(CUgraphExec exec);
using PFN_cuGraphDestroy = CUresult (*)(CUgraph graph);
using PFN_cuIpcGetMemHandle = CUresult (*)(CUipcMemHandle* handle, CUdeviceptr address);
using PFN_cuIpcOpenMemHandle_v2 = CUresult (*)(CUdeviceptr* address, CUipcMemHandle handle,
                                               unsigned flags);
using PFN_cuIpcCloseMemHandle = CUresult (*)(CUdeviceptr address);

}  // namespace monotile::runtime::cuda_api
