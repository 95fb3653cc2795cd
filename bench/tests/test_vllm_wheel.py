"""What the peers take from vLLM's wheel, without torch: the unpacking and the import scan.
Runs under pytest or as a plain script (python3 bench/tests/test_vllm_wheel.py)."""

import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.peers.vllm_wheel import (SHIMMED_MODULES, STOCK_DIR, STOCK_FILES, WheelError, main,  # noqa: E402
                                    sha256_of, unpack, unserved_imports, vllm_imports)

_SOURCE = "from vllm.platforms import current_platform\nfrom vllm.triton_utils import tl, triton\n"


def _wheel(folder: Path, skip: str = "", extra: dict | None = None) -> Path:
    path = folder / "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name in STOCK_FILES:
            if name != skip:
                z.writestr(name, _SOURCE)
        z.writestr("vllm/third_party/triton_kernels/__init__.py", "")
        z.writestr("vllm/third_party/triton_kernels/matmul_ogs.py", "x = 1\n")
        z.writestr("vllm/__init__.py", "raise ImportError('vLLM itself is never imported')\n")
        z.writestr("vllm/models/kimi_k3/nvidia/kda.py", "")
        for name, text in (extra or {}).items():
            z.writestr(name, text)
    return path


def test_unpack_writes_only_the_stock_files_and_triton_kernels():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        wheel = _wheel(tmp)
        (tmp / "peers" / STOCK_DIR / "stale.py").parent.mkdir(parents=True)
        (tmp / "peers" / STOCK_DIR / "stale.py").write_text("")
        written = unpack(wheel, tmp / "peers", expected_sha256=sha256_of(wheel))
        files = sorted(str(p.relative_to(tmp / "peers")) for p in (tmp / "peers").rglob("*") if p.is_file())
        assert files == sorted(written)
        assert sorted(f"{STOCK_DIR}/{name}" for name in STOCK_FILES) == [f for f in files if f.startswith(STOCK_DIR)]
        assert [f for f in files if not f.startswith(STOCK_DIR)] == ["triton_kernels/__init__.py",
                                                                     "triton_kernels/matmul_ogs.py"]
        assert not (tmp / "peers" / STOCK_DIR / "vllm" / "__init__.py").exists()  # vLLM's own package never runs
        assert unserved_imports(tmp / "peers" / STOCK_DIR) == {}


def test_a_wrong_or_incomplete_wheel_is_refused_with_what_is_wrong():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        wheel = _wheel(tmp)
        try:
            unpack(wheel, tmp / "peers", expected_sha256="0" * 64)
            raise AssertionError("a wheel with another sha256 was unpacked")
        except WheelError as err:
            assert f"sha256 {sha256_of(wheel)}, expected vLLM 0.33.0's {'0' * 64}" in str(err)
            assert "hint: pip download --no-deps vllm==0.33.0" in str(err)
        missing = _wheel(tmp, skip=STOCK_FILES[1])
        try:
            unpack(missing, tmp / "peers", expected_sha256=None)
            raise AssertionError("a wheel without the conv update was unpacked")
        except WheelError as err:
            assert f"no {STOCK_FILES[1]} in the wheel; expected vLLM 0.33.0's" in str(err)
        assert main([str(missing), str(tmp / "peers")]) == 1  # its sha256 is not vLLM's either
        assert main([]) == 2


def test_import_scan_names_every_vllm_module():
    source = ("import torch\nfrom vllm import _custom_ops as ops\nfrom vllm.platforms import current_platform\n"
              "    from vllm.model_executor.layers.mamba.ops.cpu.causal_conv1d import (\n"
              "import vllm.envs as envs\nfrom .op import exp\n")
    assert vllm_imports(source) == {"vllm._custom_ops", "vllm.platforms", "vllm.envs",
                                    "vllm.model_executor.layers.mamba.ops.cpu.causal_conv1d"}


def test_an_import_no_shim_serves_is_reported_per_file():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        wheel = _wheel(tmp, extra={})
        unpack(wheel, tmp / "peers", expected_sha256=None)
        (tmp / "peers" / STOCK_DIR / STOCK_FILES[0]).write_text(_SOURCE + "import vllm.envs as envs\n")
        assert unserved_imports(tmp / "peers" / STOCK_DIR) == {STOCK_FILES[0]: {"vllm.envs"}}
        (tmp / "peers" / STOCK_DIR / STOCK_FILES[2]).unlink()
        assert unserved_imports(tmp / "peers" / STOCK_DIR)[STOCK_FILES[2]] == {"(file not unpacked)"}


def test_the_real_unpacked_files_import_only_shimmed_or_unpacked_modules():
    root = Path(__file__).resolve().parents[2] / ".peers" / STOCK_DIR
    if not root.is_dir():
        print(f"skipped: {root} absent")
        return
    assert unserved_imports(root) == {}
    used = set().union(*(vllm_imports((root / name).read_text()) for name in STOCK_FILES))
    assert set(SHIMMED_MODULES) <= used, set(SHIMMED_MODULES) - used  # no shim is dead


if __name__ == "__main__":
    tests = [value for name, value in sorted(globals().items()) if name.startswith("test_")]
    for test in tests:
        test()
    print(f"{len(tests)} tests passed")
