"""The small modules that stand in for vLLM's own when the stock KDA half's files are imported.

The files unpacked from vLLM 0.33.0's wheel (bench/peers/vllm_wheel.py: STOCK_FILES under
`.peers/vllm_stock/`) keep their `from vllm... import` lines. `load_stock_kernels(root)` registers,
before importing them, a `vllm` package whose folders are the unpacked tree (no `__init__.py` of vLLM
runs) and these modules, written here from what the files use (facts of vLLM's API, not its code):

- vllm.platforms: `current_platform`, answering for the GPU torch sees as vLLM's CUDA platform does:
  SM90 is capability (9, 0), family 90; programmatic dependent launch from SM90 on; never the CPU
  platform (so causal_conv1d.py keeps its Triton kernel, also under Triton's CPU interpreter).
- vllm.triton_utils: triton, triton.language and its libdevice.
- vllm.utils.math_utils: cdiv, next_power_of_2, RCP_LN2 (1 / ln 2 as vLLM rounds it).
- vllm.utils.gpu_sync_debug: gpu_sync_allowed, a no-op context (vLLM's is one unless its sync
  checker is on); vllm.utils.torch_utils: async_tensor_h2d (a host list to a device tensor).
- vllm.model_executor.custom_op: CustomOp, an nn.Module whose forward is forward_cuda (the Triton
  kernels; vLLM's dispatch takes it where the op is enabled), and `register` a no-op decorator.
- vllm.v1.attention.backends.utils: NULL_BLOCK_ID 0 (the null block, skipped by the conv update) and
  PAD_SLOT_ID -1.
- vllm._custom_ops: empty; attn_res.py reaches it only on SM100 with vLLM's compiled extension.

Needs torch and triton (imported when loading, not at this module's import).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import types
from dataclasses import dataclass
from pathlib import Path

from bench.peers.vllm_wheel import SHIMMED_MODULES, STOCK_DIR, STOCK_FILES, unserved_imports


class StockImportError(RuntimeError):
    """The unpacked stock files are missing or import something no shim serves."""


class _Platform:
    """vLLM's current_platform as its CUDA platform answers, for the device torch sees."""

    def _capability(self) -> tuple[int, int] | None:
        import torch

        if not torch.cuda.is_available():
            return None
        return torch.cuda.get_device_capability(torch.cuda.current_device())

    def get_device_capability(self, device_id: int = 0):
        cap = self._capability()
        return None if cap is None else types.SimpleNamespace(major=cap[0], minor=cap[1],
                                                               to_int=lambda: cap[0] * 10 + cap[1])

    def is_device_capability(self, capability, device_id: int = 0) -> bool:
        cap = self._capability()
        if cap is None:
            return False
        if isinstance(capability, tuple):
            return cap == capability
        return cap[0] * 10 + cap[1] == capability

    def is_device_capability_family(self, capability: int, device_id: int = 0) -> bool:
        cap = self._capability()
        return cap is not None and (cap[0] * 10 + cap[1]) // 10 == capability // 10

    def is_arch_support_pdl(self) -> bool:
        cap = self._capability()
        return cap is not None and cap[0] >= 9

    def is_cuda(self) -> bool:
        return self._capability() is not None

    def is_cuda_alike(self) -> bool:
        return self.is_cuda()

    def is_rocm(self) -> bool:
        return False

    def is_xpu(self) -> bool:
        return False

    def is_cpu(self) -> bool:
        return False


def _custom_op_class():
    from torch import nn

    class CustomOp(nn.Module):
        """vLLM's CustomOp as the stock path runs it on the GPU: forward is forward_cuda."""

        @classmethod
        def register(cls, name: str):
            return lambda op: op

        def forward(self, *args, **kwargs):
            return self.forward_cuda(*args, **kwargs)

    return CustomOp


def _async_tensor_h2d(data, device=None, dtype=None, out=None):
    import torch

    tensor = torch.as_tensor(data, dtype=dtype if dtype is not None else (out.dtype if out is not None else None))
    if out is not None:
        return out.copy_(tensor, non_blocking=True)
    return tensor.to(device, non_blocking=True)


def shim_modules() -> dict[str, dict]:
    """Each shimmed module's attributes (SHIMMED_MODULES, in that order)."""
    import triton
    import triton.language as tl
    import triton.language.extra.libdevice as tldevice

    return {
        "vllm._custom_ops": {},
        "vllm.model_executor.custom_op": {"CustomOp": _custom_op_class()},
        "vllm.platforms": {"current_platform": _Platform()},
        "vllm.triton_utils": {"triton": triton, "tl": tl, "tldevice": tldevice, "HAS_TRITON": True},
        "vllm.utils.gpu_sync_debug": {"gpu_sync_allowed": lambda first_only=False: contextlib.nullcontext()},
        "vllm.utils.math_utils": {"cdiv": lambda a, b: -(a // -b),
                                  "next_power_of_2": lambda n: 1 if n < 1 else 1 << (n - 1).bit_length(),
                                  "RCP_LN2": 1.4426950216},
        "vllm.utils.torch_utils": {"async_tensor_h2d": _async_tensor_h2d},
        "vllm.v1.attention.backends.utils": {"NULL_BLOCK_ID": 0, "PAD_SLOT_ID": -1},
    }


@dataclass
class StockKernels:
    """The stock path's entry points, from the unpacked files."""

    attn_res: object
    causal_conv1d_update: object
    fused_recurrent_kda: object
    FusedRMSNormGated: type
    root: Path


def _register(root: Path) -> None:
    """A `vllm` package over the unpacked tree, its sub-packages as plain folders, and the shims.
    Replaces any `vllm` already imported in this process (a peer run has none)."""
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        del sys.modules[name]
    packages = {"vllm"}
    for name in list(SHIMMED_MODULES) + [f[:-3].replace("/", ".") for f in STOCK_FILES]:
        parts = name.split(".")
        packages.update(".".join(parts[:i]) for i in range(1, len(parts)))
    for package in sorted(packages, key=lambda p: p.count(".")):
        module = types.ModuleType(package)
        module.__path__ = [str(root.joinpath(*package.split(".")))]
        module.__package__ = package
        sys.modules[package] = module
    for name, attrs in shim_modules().items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module


_LOADED: dict[Path, StockKernels] = {}


def load_stock_kernels(peers: Path | str) -> StockKernels:
    """Imports the stock files unpacked under peers/vllm_stock through the shims (once a process)."""
    root = (Path(peers) / STOCK_DIR).resolve()
    if root in _LOADED:
        return _LOADED[root]
    hint = "hint: python3 -m bench.peers.vllm_wheel VLLM_WHEEL .peers (docs/bench.md)"
    if not root.is_dir():
        raise StockImportError(f"{root}: no such folder (vLLM 0.33.0's stock KDA files are not unpacked); {hint}")
    left = unserved_imports(root)
    if left:
        raise StockImportError(f"{root}: " + "; ".join(f"{name} needs {sorted(m)}" for name, m in left.items())
                               + f"; {hint}")
    _register(root)
    attn_res = importlib.import_module("vllm.models.kimi_k3.nvidia.ops.attn_res")
    conv = importlib.import_module("vllm.model_executor.layers.mamba.ops.causal_conv1d")
    recurrent = importlib.import_module("vllm.models.kimi_k3.nvidia.ops.third_party.kda.fused_recurrent")
    norm = importlib.import_module("vllm.third_party.flash_linear_attention.ops.kda")
    if os.environ.get("TRITON_INTERPRET") == "1":
        _forward_aliases_for_the_interpreter()
    kernels = StockKernels(attn_res.attn_res, conv.causal_conv1d_update, recurrent.fused_recurrent_kda,
                           norm.FusedRMSNormGated, root)
    _LOADED[root] = kernels
    return kernels


def _forward_aliases_for_the_interpreter() -> None:
    """Triton's CPU interpreter swaps triton.language's builtins (tl.exp, ...) on the module while a
    kernel runs; a module-level alias taken at import (fla's `exp = tl.exp`, imported by the stock
    recurrence) keeps the compiled-only builtin and fails there. Under the interpreter only, each
    such alias in the stock modules becomes a call through triton.language at run time: the same
    function on the GPU, where this is never done."""
    import triton.language as tl

    builtins = {}
    for space in (tl, tl.math):
        for name in dir(space):
            value = getattr(space, name)
            if tl.core.is_builtin(value):
                builtins.setdefault(id(value), (space, name))
    for module_name, module in list(sys.modules.items()):
        if not (module_name == "vllm" or module_name.startswith("vllm.")):
            continue
        for name, value in list(vars(module).items()):
            found = builtins.get(id(value))
            if found is not None and not isinstance(value, types.ModuleType):
                space, attr = found
                setattr(module, name, lambda *args, _space=space, _attr=attr, **kwargs:
                        getattr(_space, _attr)(*args, **kwargs))


def default_peers_dir() -> Path:
    """`.peers` at the repository root (where bench/peers/vllm_wheel.py unpacks)."""
    return Path(__file__).resolve().parents[2] / ".peers"
