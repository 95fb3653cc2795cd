"""The exported-kernel loader against a fake libcuda: description parsing and its error messages,
argument packing by declared type, the driver calls a load and a launch make, error names."""

import ctypes
import json
import sys

import pytest

torch = pytest.importorskip("torch")

from bench.cuda_driver import CudaDriver, DriverError  # noqa: E402
from bench.monotile_kernels import ExportError, KernelDir, Param, pack_argument, parse_spec  # noqa: E402

ERROR_NAMES = {1: b"CUDA_ERROR_INVALID_VALUE", 200: b"CUDA_ERROR_INVALID_IMAGE"}


class FakeLibcuda:
    """Records calls; each entry point returns the code set in `fail` for it (0 by default)."""

    def __init__(self, fail=None, current_context=0x1000):
        self.fail = fail or {}
        self.current_context = current_context
        self.calls = []
        self.launches = []

    def _ret(self, name, *args):
        self.calls.append((name, args))
        return self.fail.get(name, 0)

    def cuGetErrorName(self, code, out):
        name = ERROR_NAMES.get(code.value)
        if name is None:
            return 1
        out._obj.value = name
        return 0

    def cuInit(self, flags):
        return self._ret("cuInit")

    def cuCtxGetCurrent(self, out):
        out._obj.value = self.current_context
        return self._ret("cuCtxGetCurrent")

    def cuDeviceGet(self, out, ordinal):
        out._obj.value = 0
        return self._ret("cuDeviceGet", ordinal.value)

    def cuDevicePrimaryCtxRetain(self, out, device):
        out._obj.value = 0x4000
        return self._ret("cuDevicePrimaryCtxRetain", device.value)

    def cuCtxSetCurrent(self, context):
        return self._ret("cuCtxSetCurrent", context.value)

    def cuModuleLoadData(self, out, image):
        out._obj.value = 0x2000
        return self._ret("cuModuleLoadData", image.raw)

    def cuModuleGetFunction(self, out, module, name):
        out._obj.value = 0x3000
        return self._ret("cuModuleGetFunction", module.value, name)

    def cuFuncSetAttribute(self, function, attribute, value):
        return self._ret("cuFuncSetAttribute", attribute.value, value.value)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launches.append({
            "grid": (gx.value, gy.value, gz.value), "block": (bx.value, by.value, bz.value),
            "shared": shared.value, "stream": stream.value, "params": params,
        })
        return self._ret("cuLaunchKernel")

    def cuModuleUnload(self, module):
        return self._ret("cuModuleUnload")


def _spec(**overrides):
    doc = {
        "kernel": "rms_norm_w7168",
        "block": [256, 1, 1],
        "shared_bytes": 0,
        "grid": [4, 1, 1],
        "params": [
            {"name": "x", "type": "ptr<bf16>"},
            {"name": "y", "type": "ptr<bf16>"},
            {"name": "rows", "type": "i32"},
            {"name": "stride", "type": "i64"},
            {"name": "eps", "type": "f32"},
        ],
    }
    doc.update(overrides)
    return doc


def _export(tmp_path, name, doc, image=b"\x7fELF fake cubin"):
    (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    (tmp_path / f"{name}.cubin").write_bytes(image)


def _values():
    return {"x": torch.zeros(4, 8, dtype=torch.bfloat16), "y": torch.zeros(4, 8, dtype=torch.bfloat16),
            "rows": 4, "stride": 1 << 40, "eps": 1e-6}


def test_load_and_launch_make_the_expected_driver_calls(tmp_path):
    _export(tmp_path, "rmsnorm", _spec())
    lib = FakeLibcuda()
    op = KernelDir(tmp_path, CudaDriver(lib)).load("rmsnorm", device="cpu")
    values = _values()
    op(values)
    names = [c[0] for c in lib.calls]
    assert names == ["cuInit", "cuCtxGetCurrent", "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel"]
    assert lib.calls[2][1][0].startswith(b"\x7fELF fake cubin")
    assert lib.calls[3][1] == (0x2000, b"rms_norm_w7168")
    launch = lib.launches[0]
    assert launch["grid"] == (4, 1, 1) and launch["block"] == (256, 1, 1) and launch["shared"] == 0
    params = launch["params"]
    assert ctypes.c_uint64.from_address(params[0]).value == values["x"].data_ptr()
    assert ctypes.c_uint64.from_address(params[1]).value == values["y"].data_ptr()
    assert ctypes.c_int32.from_address(params[2]).value == 4
    assert ctypes.c_int64.from_address(params[3]).value == 1 << 40
    assert ctypes.c_float.from_address(params[4]).value == pytest.approx(1e-6)


def test_without_a_current_context_the_primary_one_is_made_current():
    lib = FakeLibcuda(current_context=None)
    CudaDriver(lib).ensure_context()
    assert [c for c in lib.calls if c[0] != "cuInit"] == [
        ("cuCtxGetCurrent", ()), ("cuDeviceGet", (0,)), ("cuDevicePrimaryCtxRetain", (0,)),
        ("cuCtxSetCurrent", (0x4000,)),
    ]


def test_large_dynamic_shared_memory_raises_the_limit_first(tmp_path):
    _export(tmp_path, "big", _spec(shared_bytes=100 * 1024))
    _export(tmp_path, "small", _spec(shared_bytes=48 * 1024))
    lib = FakeLibcuda()
    kernels = KernelDir(tmp_path, CudaDriver(lib))
    kernels.load("small", device="cpu")
    assert "cuFuncSetAttribute" not in [c[0] for c in lib.calls]
    kernels.load("big", device="cpu")
    assert ("cuFuncSetAttribute", (8, 100 * 1024)) in lib.calls


def test_driver_failure_names_the_error_and_the_kernel(tmp_path):
    _export(tmp_path, "rmsnorm", _spec())
    lib = FakeLibcuda(fail={"cuModuleGetFunction": 1})
    with pytest.raises(DriverError) as err:
        KernelDir(tmp_path, CudaDriver(lib)).load("rmsnorm", device="cpu")
    assert str(err.value) == (
        'cuModuleGetFunction failed for exported kernel "rmsnorm" (symbol "rms_norm_w7168"): '
        "CUDA_ERROR_INVALID_VALUE (1)"
    )


def test_unknown_error_codes_still_read_well():
    driver = CudaDriver(FakeLibcuda())
    with pytest.raises(DriverError, match=r"cuLaunchKernel failed: CUresult 999 \(999\)"):
        driver.check("cuLaunchKernel", 999)


def test_launch_failure_says_grid_and_block(tmp_path):
    _export(tmp_path, "rmsnorm", _spec())
    lib = FakeLibcuda(fail={"cuLaunchKernel": 200})
    op = KernelDir(tmp_path, CudaDriver(lib)).load("rmsnorm", device="cpu")
    with pytest.raises(DriverError, match=r'"rmsnorm" \(grid 4x1x1, block 256x1x1\): CUDA_ERROR_INVALID_IMAGE'):
        op(_values())


def test_missing_argument_lists_what_the_caller_gave(tmp_path):
    _export(tmp_path, "rmsnorm", _spec())
    op = KernelDir(tmp_path, CudaDriver(FakeLibcuda())).load("rmsnorm", device="cpu")
    values = _values()
    del values["eps"]
    with pytest.raises(ExportError, match=r"no value for params \['eps'\]; the caller provides \['rows', 'stride', 'x', 'y'\]"):
        op(values)


def test_grid_comes_from_the_caller_when_the_description_has_none(tmp_path):
    doc = _spec()
    del doc["grid"]
    _export(tmp_path, "rmsnorm", doc)
    lib = FakeLibcuda()
    op = KernelDir(tmp_path, CudaDriver(lib)).load("rmsnorm", device="cpu")
    with pytest.raises(ExportError, match="no grid: the description has none and the caller gave none"):
        op(_values())
    op(_values(), grid=(9, 2, 1))
    assert lib.launches[-1]["grid"] == (9, 2, 1)


def test_then_chains_kernels_with_shared_arguments_and_workspace(tmp_path):
    first = _spec(kernel="partials", workspace=[{"name": "acc", "bytes": 100, "zero": "each_launch"}],
                  then="reduce", params=[{"name": "x", "type": "ptr<bf16>"}, {"name": "acc", "type": "ptr<f32>"}])
    second = _spec(kernel="reduce", grid=[1, 1, 1],
                   params=[{"name": "acc", "type": "ptr<f32>"}, {"name": "y", "type": "ptr<bf16>"}])
    _export(tmp_path, "gemv", first)
    _export(tmp_path, "reduce", second)
    lib = FakeLibcuda()
    op = KernelDir(tmp_path, CudaDriver(lib)).load("gemv", device="cpu")
    assert [k.spec.symbol for k in op.kernels] == ["partials", "reduce"]
    assert op.workspace["acc"].numel() == 112  # rounded up to 16 bytes
    op.workspace["acc"].fill_(7)
    op(_values())
    assert torch.all(op.workspace["acc"] == 0)  # zeroed before the launch
    acc = op.workspace["acc"].data_ptr()
    assert ctypes.c_uint64.from_address(lib.launches[0]["params"][1]).value == acc
    assert ctypes.c_uint64.from_address(lib.launches[1]["params"][0]).value == acc


def test_then_loop_is_an_error(tmp_path):
    _export(tmp_path, "a", _spec(then="b"))
    _export(tmp_path, "b", _spec(then="a"))
    with pytest.raises(ExportError, match='"then" chain loops back to "a"'):
        KernelDir(tmp_path, CudaDriver(FakeLibcuda())).load("a", device="cpu")


def test_directory_lists_complete_exports_only(tmp_path):
    _export(tmp_path, "one", _spec())
    (tmp_path / "half.json").write_text("{}")
    kernels = KernelDir(tmp_path, CudaDriver(FakeLibcuda()))
    assert kernels.names() == ["one"] and kernels.has("one") and not kernels.has("half")
    assert not KernelDir(None).has("one") and KernelDir(None).names() == []
    with pytest.raises(ExportError, match=r'"half": half.json and half.cubin not both found'):
        kernels.spec("half")


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"kernel": ""}, '"kernel" (the extern "C" symbol) is missing'),
        ({"block": [256, 1]}, '"block" must be three positive integers [x, y, z], got [256, 1]'),
        ({"grid": [0, 1, 1]}, '"grid" must be three positive integers'),
        ({"shared_bytes": -1}, '"shared_bytes" must be a non-negative integer, got -1'),
        ({"params": [{"name": "x", "type": "ptr<bf17>"}]}, 'param "x" has unknown type "ptr<bf17>"'),
        ({"params": [{"name": "x", "type": "i32"}, {"name": "x", "type": "i32"}]}, "duplicate param names ['x']"),
        ({"params": [{"name": "x"}]}, 'params[0] must be {"name": str, "type": str}'),
        ({"workspace": [{"name": "w", "bytes": 8, "zero": "sometimes"}]}, '"zero" must be one of'),
        ({"then": 3}, '"then" must name another exported kernel, got 3'),
    ],
)
def test_malformed_descriptions_are_rejected_with_the_reason(overrides, message):
    with pytest.raises(ExportError) as err:
        parse_spec("k", json.dumps(_spec(**overrides)))
    assert str(err.value).startswith('exported kernel "k": ')
    assert message in str(err.value)


def test_invalid_json_is_an_export_error():
    with pytest.raises(ExportError, match='exported kernel "k": invalid JSON'):
        parse_spec("k", "{not json")


def test_pointer_dtype_must_match():
    with pytest.raises(ExportError, match=r'param "x" \(ptr<bf16>\) needs a torch.bfloat16 tensor, got torch.float32'):
        pack_argument("k", Param("x", "ptr<bf16>"), torch.zeros(2))


def test_scalars_are_range_checked_and_typed():
    with pytest.raises(ExportError, match=r'param "n" \(i32\) out of range \[-2147483648, 2147483647\]: 2147483648'):
        pack_argument("k", Param("n", "i32"), 1 << 31)
    with pytest.raises(ExportError, match=r'param "n" \(u32\) needs an integer, got 1.5'):
        pack_argument("k", Param("n", "u32"), 1.5)
    with pytest.raises(ExportError, match=r'param "n" \(i64\) is a scalar, got a tensor'):
        pack_argument("k", Param("n", "i64"), torch.zeros(1))
    assert pack_argument("k", Param("s", "bf16"), 1.0).value == 0x3F80
    assert pack_argument("k", Param("s", "f16"), 1.0).value == 0x3C00
    assert pack_argument("k", Param("p", "ptr<f32>"), None).value == 0


def test_without_a_driver_the_error_names_libcuda():
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("this machine has an NVIDIA driver")
    except OSError:
        pass
    with pytest.raises(DriverError, match="libcuda.so.1 not found"):
        CudaDriver().ensure_context()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
