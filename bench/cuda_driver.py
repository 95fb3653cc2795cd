"""The few CUDA driver API calls the kernel loader needs, through ctypes on libcuda.so.1.

Invariant: every call's CUresult is checked; a failure raises DriverError carrying the driver's own
error name (e.g. CUDA_ERROR_INVALID_VALUE) and the call it came from, never a bare number.
"""

from __future__ import annotations

import ctypes
from typing import Any, Sequence

CUDA_SUCCESS = 0
# CUfunction_attribute values from cuda.h.
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
DEFAULT_SHARED_LIMIT = 48 * 1024  # dynamic shared memory above this needs the attribute raised


class DriverError(RuntimeError):
    """A CUDA driver call failed; `name` is the driver's error name."""

    def __init__(self, call: str, code: int, name: str, context: str = ""):
        self.call, self.code, self.name = call, code, name
        where = f" for {context}" if context else ""
        super().__init__(f"{call} failed{where}: {name} ({code})")


class CudaDriver:
    """Thin, checked wrappers over libcuda. `lib` may be any object with the same functions
    (tests pass a fake); by default libcuda.so.1 is opened on first use."""

    def __init__(self, lib: Any = None):
        self._lib = lib

    @property
    def lib(self) -> Any:
        if self._lib is None:
            try:
                self._lib = ctypes.CDLL("libcuda.so.1")
            except OSError as err:
                raise DriverError("dlopen", -1, "libcuda.so.1 not found", f"the NVIDIA driver ({err})") from err
        return self._lib

    def error_name(self, code: int) -> str:
        name = ctypes.c_char_p()
        if self.lib.cuGetErrorName(ctypes.c_int(code), ctypes.byref(name)) != CUDA_SUCCESS or not name.value:
            return f"CUresult {code}"
        return name.value.decode()

    def check(self, call: str, code: int, context: str = "") -> None:
        if code != CUDA_SUCCESS:
            raise DriverError(call, code, self.error_name(code), context)

    def ensure_context(self) -> None:
        """Makes device 0's primary context current when nothing is (torch uses the same one)."""
        ctx = ctypes.c_void_p()
        self.check("cuInit", self.lib.cuInit(ctypes.c_uint(0)))
        self.check("cuCtxGetCurrent", self.lib.cuCtxGetCurrent(ctypes.byref(ctx)))
        if ctx.value:
            return
        device = ctypes.c_int()
        self.check("cuDeviceGet", self.lib.cuDeviceGet(ctypes.byref(device), ctypes.c_int(0)))
        self.check("cuDevicePrimaryCtxRetain", self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device))
        self.check("cuCtxSetCurrent", self.lib.cuCtxSetCurrent(ctx))

    def load_module(self, image: bytes, context: str) -> ctypes.c_void_p:
        module = ctypes.c_void_p()
        buffer = ctypes.create_string_buffer(image, len(image))  # kept alive for the call only
        self.check("cuModuleLoadData", self.lib.cuModuleLoadData(ctypes.byref(module), buffer), context)
        return module

    def get_function(self, module: ctypes.c_void_p, name: str, context: str) -> ctypes.c_void_p:
        function = ctypes.c_void_p()
        code = self.lib.cuModuleGetFunction(ctypes.byref(function), module, name.encode())
        self.check("cuModuleGetFunction", code, context)
        return function

    def set_dynamic_shared(self, function: ctypes.c_void_p, nbytes: int, context: str) -> None:
        code = self.lib.cuFuncSetAttribute(
            function, ctypes.c_int(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), ctypes.c_int(nbytes)
        )
        self.check("cuFuncSetAttribute", code, context)

    def launch(
        self,
        function: ctypes.c_void_p,
        grid: Sequence[int],
        block: Sequence[int],
        shared_bytes: int,
        stream: int,
        args: Sequence[ctypes._SimpleCData],
        context: str,
    ) -> None:
        """cuLaunchKernel with kernelParams pointing at each packed argument.

        The argument objects must stay alive during the call only: the driver copies the values
        when the launch is enqueued, or recorded into a graph being captured.
        """
        params = (ctypes.c_void_p * max(1, len(args)))()
        for i, arg in enumerate(args):
            params[i] = ctypes.cast(ctypes.pointer(arg), ctypes.c_void_p)
        code = self.lib.cuLaunchKernel(
            function,
            ctypes.c_uint(grid[0]), ctypes.c_uint(grid[1]), ctypes.c_uint(grid[2]),
            ctypes.c_uint(block[0]), ctypes.c_uint(block[1]), ctypes.c_uint(block[2]),
            ctypes.c_uint(shared_bytes),
            ctypes.c_void_p(stream),
            params,
            None,
        )
        self.check("cuLaunchKernel", code, context)

    def unload_module(self, module: ctypes.c_void_p) -> None:
        self.check("cuModuleUnload", self.lib.cuModuleUnload(module))
