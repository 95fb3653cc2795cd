"""The JIT table's side of `monotile first-call`: finding the binary and its environment, cold then
warm on one fresh cache folder per trial, and refusing a warm call that compiled. A stand-in
binary (a Python script) plays monotile: it compiles when the cache folder holds no entry."""

import json
import os
import stat
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from bench.tables import jit  # noqa: E402

FAKE = """#!{python}
import json, os, sys
args = sys.argv[1:]
assert args[0] == "first-call", args
kernel, cache = args[1], args[args.index("--cache-dir") + 1]
entry = os.path.join(cache, "entry")
hit = os.path.exists(entry) and "{mode}" != "always-compile"
if "{mode}" == "fail":
    print("monotile first-call: no NVIDIA GPU: dlopen failed", file=sys.stderr)
    sys.exit(1)
os.makedirs(cache, exist_ok=True)
open(entry, "w").write("x")
print(json.dumps({{"kernel": kernel, "first_call_ms": 2.0 if hit else 90.0, "lower_ms": 0.2,
                  "compile_ms": 0.5 if hit else 88.0, "load_ms": 0.3, "launch_ms": 0.1,
                  "cache_hit": hit, "compiled": 0 if hit else 1, "args": args[4:]}}))
"""


def _fake_monotile(tmp_path: Path, mode: str = "normal") -> Path:
    build = tmp_path / "build-gpu"
    (build / "tools").mkdir(parents=True)
    binary = build / "tools" / "monotile"
    binary.write_text(FAKE.format(python=sys.executable, mode=mode))
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    return binary


def test_finds_the_gpu_check_build_and_its_libraries_and_worker(tmp_path):
    binary = _fake_monotile(tmp_path)
    libs = tmp_path / "build-gpu" / "device-deps" / "usr" / "lib" / "x86_64-linux-gnu"
    libs.mkdir(parents=True)
    worker = tmp_path / "build-gpu" / "jit" / "monotile-jit-worker"
    worker.parent.mkdir()
    worker.write_text("")
    found, env = jit.find_monotile({"LD_LIBRARY_PATH": "/opt/x"}, root=tmp_path)
    assert found == binary
    assert env["LD_LIBRARY_PATH"] == f"{libs}:/opt/x"
    assert env["MONOTILE_JIT_WORKER"] == str(worker)


def test_monotile_bin_wins_then_path_and_no_binary_is_none(tmp_path):
    binary = _fake_monotile(tmp_path)
    found, _ = jit.find_monotile({"MONOTILE_BIN": str(binary)}, root=tmp_path / "elsewhere")
    assert found == binary
    found, _ = jit.find_monotile({"PATH": str(binary.parent)}, root=tmp_path / "elsewhere")
    assert found == binary
    assert jit.find_monotile({"PATH": str(tmp_path)}, root=tmp_path / "elsewhere")[0] is None


def test_cold_compiles_and_warm_hits_on_one_fresh_cache_per_trial(tmp_path):
    binary = _fake_monotile(tmp_path)
    cold, warm, records = jit.ours_cold_warm(binary, dict(os.environ), "rmsnorm_rows4_h7168", 2,
                                             ["--arg", "eps=1e-6"])
    assert cold.median_us == pytest.approx(90e3) and warm.median_us == pytest.approx(2e3)
    assert [r["mode"] for r in records] == ["cold", "warm", "cold", "warm"]
    assert records[0]["args"] == ["--arg", "eps=1e-6"]
    assert jit._phases(records, "warm") == "lower 0.2 compile 0.5 load 0.3 launch 0.1 ms, compiled 0"


def test_a_warm_call_that_compiles_is_an_error(tmp_path):
    binary = _fake_monotile(tmp_path, mode="always-compile")
    with pytest.raises(RuntimeError, match="warm first call of copy_bytes67108864 compiled"):
        jit.ours_cold_warm(binary, dict(os.environ), "copy_bytes67108864", 1)


def test_a_failing_binary_reports_its_message(tmp_path):
    binary = _fake_monotile(tmp_path, mode="fail")
    with pytest.raises(RuntimeError, match="first-call softmax_rows8192_cols4096 failed \\(1\\): monotile first-call: no NVIDIA GPU"):
        jit.ours_cold_warm(binary, dict(os.environ), "softmax_rows8192_cols4096", 1)


class _Kernels:
    path = Path("fake")

    def names(self):
        return ["copy_bytes67108864", "copy_bytes67108864__wide", "rmsnorm_rows4_h7168"]

    def has(self, name):
        return False


def test_rows_cover_every_exported_kernel_but_variants(tmp_path):
    from bench.measure import Context

    binary = _fake_monotile(tmp_path)
    ctx = Context(_Kernels(), device="cpu", quick=True)
    cold_row, warm_row = jit.Row("jit", "cold", 0), jit.Row("jit", "warm", 0)
    more = jit._ours_rows(ctx, binary, dict(os.environ), cold_row, warm_row)
    assert cold_row.results[jit.OURS].timing.median_us == pytest.approx(90e3)
    assert warm_row.results[jit.OURS].check.endswith("compiled 0")
    assert [row.shape for row in more] == ["first call, copy_bytes67108864"]
    assert more[0].results[jit.WARM].timing.median_us == pytest.approx(2e3)
    json.dumps([r.as_dict(4e12) for r in more])  # the results file can hold them
