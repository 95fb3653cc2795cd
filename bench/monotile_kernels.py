"""Loads monotile's exported kernels (a CUBIN and a JSON description each) and launches them on
torch's current stream, so that torch's CUDA-graph capture records the launches.

Export format (docs/bench.md): a directory holding, per kernel, `<name>.cubin` and `<name>.json` =
{"kernel": extern-C symbol, "block": [x, y, z], "shared_bytes": dynamic bytes, "params": [{"name",
"type"}], "grid": [x, y, z] (optional), "workspace": [{"name", "bytes", "zero"}] (optional),
"then": "<name>" (optional: a kernel launched right after, with the same named arguments)}.
Invariant: arguments are bound by the parameter names the JSON declares and packed by their
declared types; a missing name, a wrong dtype or an out-of-range scalar raises before any launch.
"""

from __future__ import annotations

import ctypes
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import torch

from bench.cuda_driver import DEFAULT_SHARED_LIMIT, CudaDriver


class ExportError(ValueError):
    """An exported kernel's description is malformed, or its arguments do not fit it."""


# Element types a parameter may name, with their torch dtype.
ELEMENT_DTYPES: dict[str, torch.dtype] = {
    "bf16": torch.bfloat16,
    "f16": torch.float16,
    "f32": torch.float32,
    "f64": torch.float64,
    "i8": torch.int8,
    "i16": torch.int16,
    "i32": torch.int32,
    "i64": torch.int64,
    "u8": torch.uint8,
    "u16": torch.uint16,
    "u32": torch.uint32,
    "u64": torch.uint64,
}
_INT_RANGES = {
    "i8": (-(1 << 7), (1 << 7) - 1),
    "i16": (-(1 << 15), (1 << 15) - 1),
    "i32": (-(1 << 31), (1 << 31) - 1),
    "i64": (-(1 << 63), (1 << 63) - 1),
    "u8": (0, (1 << 8) - 1),
    "u16": (0, (1 << 16) - 1),
    "u32": (0, (1 << 32) - 1),
    "u64": (0, (1 << 64) - 1),
}
_CTYPES = {
    "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
    "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64,
    "f32": ctypes.c_float, "f64": ctypes.c_double,
}
_POINTER = re.compile(r"^ptr<(\w+)>$")
WORKSPACE_ZERO_MODES = ("once", "each_launch", "never")


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # "ptr<bf16>", "i32", "f32", ...

    @property
    def pointee(self) -> str | None:
        """The element type of a pointer parameter, or None for a scalar."""
        match = _POINTER.match(self.type)
        return match.group(1) if match else None


@dataclass(frozen=True)
class Workspace:
    """Scratch memory the kernel needs beyond the caller's tensors (split-K partials, counters).

    zero: "once" (allocated zeroed; the kernel resets what it uses, e.g. epoch counters),
    "each_launch" (zeroed before every launch; the memset is part of the timed work), "never".
    """

    name: str
    nbytes: int
    zero: str


@dataclass(frozen=True)
class KernelSpec:
    name: str  # file stem in the export directory
    symbol: str  # the extern "C" kernel name inside the CUBIN
    block: tuple[int, int, int]
    shared_bytes: int
    params: tuple[Param, ...]
    grid: tuple[int, int, int] | None
    workspace: tuple[Workspace, ...]
    then: str | None


def _fail(name: str, what: str) -> ExportError:
    return ExportError(f'exported kernel "{name}": {what}')


def _dims(name: str, key: str, value: Any) -> tuple[int, int, int]:
    if not (isinstance(value, list) and len(value) == 3 and all(isinstance(v, int) and v >= 1 for v in value)):
        raise _fail(name, f'"{key}" must be three positive integers [x, y, z], got {value!r}')
    return (value[0], value[1], value[2])


def _param(name: str, index: int, entry: Any) -> Param:
    if not (isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("type"), str)):
        raise _fail(name, f'params[{index}] must be {{"name": str, "type": str}}, got {entry!r}')
    param = Param(entry["name"], entry["type"])
    element = param.pointee or param.type
    if element not in ELEMENT_DTYPES:
        known = ", ".join(sorted(ELEMENT_DTYPES))
        raise _fail(name, f'param "{param.name}" has unknown type "{param.type}": expected ptr<T> or T with T in {known}')
    if param.pointee is None and element not in _CTYPES:
        raise _fail(name, f'param "{param.name}": scalar type "{element}" cannot be passed by value; use a pointer')
    return param


def _workspace(name: str, entry: Any) -> Workspace:
    ok = isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("bytes"), int)
    if not ok or entry["bytes"] <= 0:
        raise _fail(name, f'workspace entries must be {{"name": str, "bytes": positive int, "zero": ...}}, got {entry!r}')
    zero = entry.get("zero", "once")
    if zero not in WORKSPACE_ZERO_MODES:
        raise _fail(name, f'workspace "{entry["name"]}": "zero" must be one of {WORKSPACE_ZERO_MODES}, got {zero!r}')
    return Workspace(entry["name"], entry["bytes"], zero)


def parse_spec(name: str, text: str) -> KernelSpec:
    """Parses and validates one `<name>.json`."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise _fail(name, f"invalid JSON: {err}") from err
    if not isinstance(doc, dict):
        raise _fail(name, "the description must be a JSON object")
    if not isinstance(doc.get("kernel"), str) or not doc["kernel"]:
        raise _fail(name, '"kernel" (the extern "C" symbol) is missing')
    shared = doc.get("shared_bytes", 0)
    if not isinstance(shared, int) or shared < 0:
        raise _fail(name, f'"shared_bytes" must be a non-negative integer, got {shared!r}')
    if not isinstance(doc.get("params"), list):
        raise _fail(name, '"params" (a list of {"name", "type"}) is missing')
    params = tuple(_param(name, i, p) for i, p in enumerate(doc["params"]))
    names = [p.name for p in params]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise _fail(name, f"duplicate param names {duplicates}")
    grid = _dims(name, "grid", doc["grid"]) if doc.get("grid") is not None else None
    workspace = tuple(_workspace(name, w) for w in doc.get("workspace", []))
    then = doc.get("then")
    if then is not None and not isinstance(then, str):
        raise _fail(name, f'"then" must name another exported kernel, got {then!r}')
    return KernelSpec(name, doc["kernel"], _dims(name, "block", doc.get("block")), shared, params, grid, workspace, then)


def _bf16_bits(value: float) -> int:
    return torch.tensor([value], dtype=torch.bfloat16).view(torch.int16).item() & 0xFFFF


def _f16_bits(value: float) -> int:
    return torch.tensor([value], dtype=torch.float16).view(torch.int16).item() & 0xFFFF


def pack_argument(kernel: str, param: Param, value: Any) -> ctypes._SimpleCData:
    """Packs one argument by its declared type: a tensor's data_ptr() for pointers (its dtype must
    match), a Python number for scalars (range-checked)."""
    if param.pointee is not None:
        if value is None:
            return ctypes.c_uint64(0)
        if isinstance(value, int) and not isinstance(value, bool):
            return ctypes.c_uint64(value)  # a raw device address (workspace)
        if not isinstance(value, torch.Tensor):
            raise _fail(kernel, f'param "{param.name}" ({param.type}) needs a tensor, got {type(value).__name__}')
        expected = ELEMENT_DTYPES[param.pointee]
        if value.dtype != expected:
            raise _fail(kernel, f'param "{param.name}" ({param.type}) needs a {expected} tensor, got {value.dtype}')
        return ctypes.c_uint64(value.data_ptr())
    if isinstance(value, torch.Tensor):
        raise _fail(kernel, f'param "{param.name}" ({param.type}) is a scalar, got a tensor')
    if param.type in _INT_RANGES:
        if isinstance(value, float) or not isinstance(value, int):
            raise _fail(kernel, f'param "{param.name}" ({param.type}) needs an integer, got {value!r}')
        lo, hi = _INT_RANGES[param.type]
        if not lo <= value <= hi:
            raise _fail(kernel, f'param "{param.name}" ({param.type}) out of range [{lo}, {hi}]: {value}')
        return _CTYPES[param.type](value)
    if param.type in ("f32", "f64"):
        return _CTYPES[param.type](float(value))
    if param.type == "bf16":
        return ctypes.c_uint16(_bf16_bits(float(value)))
    if param.type == "f16":
        return ctypes.c_uint16(_f16_bits(float(value)))
    raise _fail(kernel, f'param "{param.name}": cannot pack type "{param.type}"')


def _current_stream() -> int:
    """torch's current stream: a launch there is recorded when torch captures a graph."""
    return torch.cuda.current_stream().cuda_stream if torch.cuda.is_available() else 0


class Kernel:
    """One loaded CUBIN function, launched with arguments bound by parameter name."""

    def __init__(self, spec: KernelSpec, image: bytes, driver: CudaDriver):
        self.spec = spec
        self._driver = driver
        context = f'exported kernel "{spec.name}" (symbol "{spec.symbol}")'
        self._module = driver.load_module(image, context)
        self._function = driver.get_function(self._module, spec.symbol, context)
        if spec.shared_bytes > DEFAULT_SHARED_LIMIT:
            driver.set_dynamic_shared(self._function, spec.shared_bytes, context)

    def pack(self, values: Mapping[str, Any]) -> list[ctypes._SimpleCData]:
        missing = [p.name for p in self.spec.params if p.name not in values]
        if missing:
            raise _fail(
                self.spec.name,
                f"no value for params {missing}; the caller provides {sorted(values)}",
            )
        return [pack_argument(self.spec.name, p, values[p.name]) for p in self.spec.params]

    def launch(self, values: Mapping[str, Any], grid: Sequence[int] | None = None, stream: int | None = None) -> None:
        grid = tuple(grid) if grid is not None else self.spec.grid
        if grid is None:
            raise _fail(self.spec.name, "no grid: the description has none and the caller gave none")
        if stream is None:
            stream = _current_stream()
        args = self.pack(values)
        context = f'exported kernel "{self.spec.name}" (grid {"x".join(map(str, grid))}, block {"x".join(map(str, self.spec.block))})'
        self._driver.launch(self._function, grid, self.spec.block, self.spec.shared_bytes, stream, args, context)


class Op:
    """An exported kernel and the kernels chained after it ("then"), sharing named arguments and
    the workspaces they declare."""

    def __init__(self, kernels: list[Kernel], device: str = "cuda"):
        self.kernels = kernels
        self.workspace: dict[str, torch.Tensor] = {}
        self._zero_each_launch: list[torch.Tensor] = []
        for kernel in kernels:
            for w in kernel.spec.workspace:
                if w.name in self.workspace:
                    continue
                nbytes = (w.nbytes + 15) // 16 * 16
                buffer = torch.zeros(nbytes, dtype=torch.uint8, device=device)
                self.workspace[w.name] = buffer
                if w.zero == "each_launch":
                    self._zero_each_launch.append(buffer)

    @property
    def name(self) -> str:
        return self.kernels[0].spec.name

    def params(self) -> list[Param]:
        """Every parameter of the chain, first occurrence first."""
        seen: dict[str, Param] = {}
        for kernel in self.kernels:
            for p in kernel.spec.params:
                seen.setdefault(p.name, p)
        return list(seen.values())

    def __call__(self, values: Mapping[str, Any], grid: Sequence[int] | None = None) -> None:
        bound = dict(values)
        for name, buffer in self.workspace.items():
            bound[name] = buffer.data_ptr()
        for buffer in self._zero_each_launch:
            buffer.zero_()
        for kernel in self.kernels:
            kernel.launch(bound, grid if kernel is self.kernels[0] else None)


class KernelDir:
    """A directory of exported kernels; `load` reads, validates and loads one by name."""

    def __init__(self, path: str | Path | None, driver: CudaDriver | None = None):
        self.path = Path(path) if path is not None else None
        self._driver = driver or CudaDriver()
        self._context_ready = False

    def has(self, name: str) -> bool:
        return self.path is not None and (self.path / f"{name}.json").is_file() and (self.path / f"{name}.cubin").is_file()

    def names(self) -> list[str]:
        if self.path is None or not self.path.is_dir():
            return []
        return sorted(p.stem for p in self.path.glob("*.json") if self.has(p.stem))

    def spec(self, name: str) -> KernelSpec:
        if not self.has(name):
            raise ExportError(f'exported kernel "{name}": {name}.json and {name}.cubin not both found in {self.path}')
        return parse_spec(name, (self.path / f"{name}.json").read_text())

    def load_kernel(self, name: str) -> Kernel:
        spec = self.spec(name)
        if not self._context_ready:
            self._driver.ensure_context()
            self._context_ready = True
        return Kernel(spec, (self.path / f"{name}.cubin").read_bytes(), self._driver)

    def load(self, name: str, device: str = "cuda") -> Op:
        kernels = [self.load_kernel(name)]
        while kernels[-1].spec.then is not None:
            nxt = kernels[-1].spec.then
            if nxt in [k.spec.name for k in kernels]:
                raise ExportError(f'exported kernel "{name}": "then" chain loops back to "{nxt}"')
            kernels.append(self.load_kernel(nxt))
        return Op(kernels, device)
