// The few HIP runtime API types, constants and entry-point signatures the HIP device uses,
// declared here so that building needs no HIP SDK (libamdhip64 is dlopen'ed at run time).
// Values and signatures are those of hip_runtime_api.h in HIP 5.x and 6.x; driver_api_hip_test.cpp
// checks them against the installed header. hipDeviceProp_t's layout changed in HIP 6 (the
// R0600 struct behind hipGetDevicePropertiesR0600), so the few fields read are located by offset.
#pragma once

#include <cstddef>
#include <cstdint>

namespace monotile::runtime::hip_api {

using hipError_t = int;
using hipDevice_t = int;
using hipDeviceptr_t = void*;
struct ihipStream_t;
struct ihipEvent_t;
struct ihipModule_t;
struct ihipModuleSymbol_t;
struct ihipGraph;
struct hipGraphExec;
using hipStream_t = ihipStream_t*;
using hipEvent_t = ihipEvent_t*;
using hipModule_t = ihipModule_t*;
using hipFunction_t = ihipModuleSymbol_t*;
using hipGraph_t = ihipGraph*;
using hipGraphExec_t = hipGraphExec*;
using hipStreamCaptureMode = int;

constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorInvalidValue = 1;
constexpr hipError_t hipErrorOutOfMemory = 2;
constexpr hipError_t hipErrorNoDevice = 100;
constexpr hipError_t hipErrorInvalidDevice = 101;
constexpr hipError_t hipErrorNotFound = 500;

// The header spells these as macros (hipHostMallocMapped, hipHostMallocPortable, hipStreamNonBlocking).
constexpr unsigned kHostMallocMapped = 0x2;
constexpr unsigned kHostMallocPortable = 0x1;
constexpr unsigned kStreamNonBlocking = 0x1;
// Another process's buffer (hipIpcMemHandle_t, HIP_IPC_HANDLE_SIZE). hipIpcMemLazyEnablePeerAccess
// is 0 in HIP 5's header and 0x1 in ROCm 6's; hipIpcOpenMemHandle takes the one of its own version.
struct hipIpcMemHandle_t {
  char reserved[64];
};
constexpr unsigned kIpcMemLazyEnablePeerAccessHip5 = 0x0;
constexpr unsigned kIpcMemLazyEnablePeerAccessHip6 = 0x1;
constexpr hipStreamCaptureMode hipStreamCaptureModeThreadLocal = 1;

// hipDeviceProp_t, by layout. R0000: HIP 5's hipGetDeviceProperties; R0600: HIP 6's
// hipGetDevicePropertiesR0600. Offsets of the fields read, and each struct's size.
struct DevicePropLayout {
  size_t total_global_mem;        // size_t
  size_t shared_mem_per_block;    // size_t
  size_t multi_processor_count;   // int
  size_t gcn_arch_name;           // char[256]
  size_t size;
};
constexpr DevicePropLayout kDevicePropR0000{256, 264, 336, 396, 792};
constexpr DevicePropLayout kDevicePropR0600{288, 296, 388, 1160, 1472};
// Buffer handed to hipGetDeviceProperties*: larger than either struct, so a later runtime's
// longer struct writes into slack rather than past the end.
constexpr size_t kDevicePropBufferBytes = 8192;

// Entry points, named after the exported symbol.
using PFN_hipGetErrorName = const char* (*)(hipError_t error);
using PFN_hipInit = hipError_t (*)(unsigned flags);
using PFN_hipDriverGetVersion = hipError_t (*)(int* version);
using PFN_hipRuntimeGetVersion = hipError_t (*)(int* version);
using PFN_hipGetDeviceCount = hipError_t (*)(int* count);
using PFN_hipSetDevice = hipError_t (*)(int device);
using PFN_hipDeviceGetName = hipError_t (*)(char* name, int length, hipDevice_t device);
using PFN_hipDeviceTotalMem = hipError_t (*)(size_t* bytes, hipDevice_t device);
using PFN_hipGetDeviceProperties = hipError_t (*)(void* properties, int device);
using PFN_hipDeviceSynchronize = hipError_t (*)();
using PFN_hipMalloc = hipError_t (*)(void** address, size_t bytes);
using PFN_hipFree = hipError_t (*)(void* address);
using PFN_hipHostMalloc = hipError_t (*)(void** host, size_t bytes, unsigned flags);
using PFN_hipHostGetDevicePointer = hipError_t (*)(void** address, void* host, unsigned flags);
using PFN_hipHostFree = hipError_t (*)(void* host);
using PFN_hipMemcpyHtoD = hipError_t (*)(hipDeviceptr_t destination, void* source, size_t bytes);
using PFN_hipMemcpyDtoH = hipError_t (*)(void* destination, hipDeviceptr_t source, size_t bytes);
using PFN_hipMemcpyDtoD = hipError_t (*)(hipDeviceptr_t destination, hipDeviceptr_t source,
                                         size_t bytes);
using PFN_hipMemsetD8 = hipError_t (*)(hipDeviceptr_t destination, unsigned char value,
                                       size_t count);
using PFN_hipMemcpyHtoDAsync = hipError_t (*)(hipDeviceptr_t destination, void* source,
                                              size_t bytes, hipStream_t stream);
using PFN_hipMemcpyDtoHAsync = hipError_t (*)(void* destination, hipDeviceptr_t source,
                                              size_t bytes, hipStream_t stream);
using PFN_hipMemcpyDtoDAsync = hipError_t (*)(hipDeviceptr_t destination, hipDeviceptr_t source,
                                              size_t bytes, hipStream_t stream);
using PFN_hipMemsetD8Async = hipError_t (*)(hipDeviceptr_t destination, unsigned char value,
                                            size_t count, hipStream_t stream);
using PFN_hipStreamCreateWithFlags = hipError_t (*)(hipStream_t* stream, unsigned flags);
using PFN_hipStreamDestroy = hipError_t (*)(hipStream_t stream);
using PFN_hipStreamSynchronize = hipError_t (*)(hipStream_t stream);
using PFN_hipEventCreate = hipError_t (*)(hipEvent_t* event);
using PFN_hipEventDestroy = hipError_t (*)(hipEvent_t event);
using PFN_hipEventRecord = hipError_t (*)(hipEvent_t event, hipStream_t stream);
using PFN_hipEventSynchronize = hipError_t (*)(hipEvent_t event);
using PFN_hipEventElapsedTime = hipError_t (*)(float* milliseconds, hipEvent_t start,
                                               hipEvent_t end);
using PFN_hipModuleLoadData = hipError_t (*)(hipModule_t* module, const void* image);
using PFN_hipModuleUnload = hipError_t (*)(hipModule_t module);
using PFN_hipModuleGetFunction = hipError_t (*)(hipFunction_t* function, hipModule_t module,
                                                const char* name);
using PFN_hipModuleLaunchKernel = hipError_t (*)(hipFunction_t function, unsigned grid_x,
                                                 unsigned grid_y, unsigned grid_z, unsigned block_x,
                                                 unsigned block_y, unsigned block_z,
                                                 unsigned shared_memory_bytes, hipStream_t stream,
                                                 void** params, void** extra);
using PFN_hipStreamBeginCapture = hipError_t (*)(hipStream_t stream, hipStreamCaptureMode mode);
using PFN_hipStreamEndCapture = hipError_t (*)(hipStream_t stream, hipGraph_t* graph);
using PFN_hipGraphInstantiateWithFlags = hipError_t (*)(hipGraphExec_t* exec, hipGraph_t graph,
                                                        unsigned long long flags);
using PFN_hipGraphLaunch = hipError_t (*)(hipGraphExec_t exec, hipStream_t stream);
using PFN_hipGraphExecDestroy = hipError_t (*)(hipGraphExec_t exec);
using PFN_hipGraphDestroy = hipError_t (*)(hipGraph_t graph);
using PFN_hipIpcGetMemHandle = hipError_t (*)(hipIpcMemHandle_t* handle, void* address);
using PFN_hipIpcOpenMemHandle = hipError_t (*)(void** address, hipIpcMemHandle_t handle,
                                               unsigned flags);
using PFN_hipIpcCloseMemHandle = hipError_t (*)(void* address);

}  // namespace monotile::runtime::hip_api
