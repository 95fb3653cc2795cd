"""JIT: time to the first result of a kernel in a fresh process, ours and Triton's, cold and warm.

Triton cold: a fresh TRITON_CACHE_DIR (compile, including Triton's launcher stub). Triton warm: a
second fresh process on the cache the cold one filled. Ours, by `monotile first-call NAME` (C++,
tools/first_call_command.cpp): cold on an empty monotile cache folder (lower, key, miss, NVRTC,
store, load, launch, synchronize), warm on the folder the cold process filled (lower, key, hit,
load, launch, synchronize), which must compile nothing (the process's cache counters say so; a warm
call that compiled is reported as an error). Ours "cubin": loading our exported CUBIN from Python
and its first launch. Device set-up and inputs come before every clock. Each number is the median
of a few fresh processes. The RMSNorm row compares with Triton; every other exported kernel gets a
row of its own (cold and warm), so the JIT row covers each benchmark kernel.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.measure import VARIANT_SEPARATOR, Context
from bench.report import OURS, Result, Row
from bench.timing import Timing

ROWS, HIDDEN = 4, 7168
KERNEL = f"rmsnorm_rows{ROWS}_h{HIDDEN}"
KERNELS = {}  # reuses the rmsnorm export
REPO_ROOT = Path(__file__).resolve().parents[2]
# Where `monotile` is looked for when MONOTILE_BIN is unset: the GPU check's build, then the default.
BUILD_DIRS = ("build-gpu", "build")
COLD, WARM = f"{OURS} cold", f"{OURS} warm"


def _probe(args: list[str], env: dict) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "bench.jit_probe", *args], cwd=REPO_ROOT, env=env,
        capture_output=True, text=True, timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"jit probe {args[0]} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _timing(samples_ms: list[float]) -> Timing:
    us = [s * 1e3 for s in samples_ms]
    return Timing(statistics.median(us), min(us), max(us), launches=1, copies=1, samples_us=us)


def _triton(trials: int) -> tuple[Timing, Timing]:
    cold, warm = [], []
    for _ in range(trials):
        with tempfile.TemporaryDirectory(prefix="triton-cache-") as cache:
            env = dict(os.environ, TRITON_CACHE_DIR=cache)
            cold.append(_probe(["triton", str(ROWS), str(HIDDEN)], env)["first_call_ms"])
            warm.append(_probe(["triton", str(ROWS), str(HIDDEN)], env)["first_call_ms"])
    return _timing(cold), _timing(warm)


def find_monotile(environ: dict | None = None, root: Path = REPO_ROOT) -> tuple[Path | None, dict]:
    """The `monotile` binary and the environment to run it in: MONOTILE_BIN, else the first of
    BUILD_DIRS that holds tools/monotile, else `monotile` on PATH. A GPU-check build keeps the Debian libraries it links in
    <build>/device-deps and its compile worker in <build>/jit: both are added to the environment."""
    env = dict(os.environ if environ is None else environ)
    if env.get("MONOTILE_BIN"):
        binary = Path(env["MONOTILE_BIN"])
        build = binary.resolve().parent.parent
    else:
        build = next((root / d for d in BUILD_DIRS if (root / d / "tools" / "monotile").is_file()), None)
        binary = build / "tools" / "monotile" if build else None
        on_path = shutil.which("monotile", path=env.get("PATH")) if binary is None else None
        if on_path:
            binary = Path(on_path)
            build = binary.resolve().parent.parent
    if binary is None or not binary.is_file():
        return None, env
    libs = build / "device-deps" / "usr" / "lib" / "x86_64-linux-gnu"
    if libs.is_dir():
        env["LD_LIBRARY_PATH"] = f"{libs}:{env['LD_LIBRARY_PATH']}" if env.get("LD_LIBRARY_PATH") else str(libs)
    worker = build / "jit" / "monotile-jit-worker"
    if worker.is_file() and not env.get("MONOTILE_JIT_WORKER"):
        env["MONOTILE_JIT_WORKER"] = str(worker)
    return binary, env


def first_call(binary: Path, env: dict, kernel: str, cache_dir: str, extra: list[str] | None = None) -> dict:
    """One `monotile first-call` in a fresh process; its JSON line."""
    done = subprocess.run(
        [str(binary), "first-call", kernel, "--cache-dir", cache_dir, *(extra or [])],
        env=env, capture_output=True, text=True, timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"monotile first-call {kernel} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ours_cold_warm(binary: Path, env: dict, kernel: str, trials: int,
                   extra: list[str] | None = None) -> tuple[Timing, Timing, list[dict]]:
    """Cold then warm first calls on a fresh cache folder per trial. Raises when a warm call
    compiled (a cache miss where a hit was due) or a cold call did not (the cache was not empty)."""
    cold, warm, records = [], [], []
    for _ in range(trials):
        with tempfile.TemporaryDirectory(prefix="monotile-cache-") as cache:
            first = first_call(binary, env, kernel, cache, extra)
            second = first_call(binary, env, kernel, cache, extra)
        if first["compiled"] != 1:
            raise RuntimeError(f"cold first call of {kernel} compiled nothing on an empty cache: {first}")
        if second["compiled"] != 0 or not second["cache_hit"]:
            raise RuntimeError(f"warm first call of {kernel} compiled: {second}")
        cold.append(first["first_call_ms"])
        warm.append(second["first_call_ms"])
        records += [dict(first, mode="cold"), dict(second, mode="warm")]
    return _timing(cold), _timing(warm), records


def _ours_rows(ctx: Context, binary: Path | None, env: dict, cold_row: Row, warm_row: Row) -> list[Row]:
    if binary is None:
        why = f"no monotile binary (set MONOTILE_BIN, build one of {', '.join(BUILD_DIRS)} or put it on PATH)"
        cold_row.results[OURS] = Result(OURS, status=why)
        warm_row.results[OURS] = Result(OURS, status=why)
        return []
    trials = 1 if ctx.quick else 3
    try:
        cold, warm, records = ours_cold_warm(binary, env, KERNEL, trials, ["--arg", "eps=1e-6"])
        cold_row.results[OURS] = Result(OURS, cold, check=_phases(records, "cold"))
        warm_row.results[OURS] = Result(OURS, warm, check=_phases(records, "warm"))
    except Exception as err:
        for row in (cold_row, warm_row):
            row.results[OURS] = Result(OURS, status=f"error: {err}"[:300])
    rows = []
    for name in ctx.kernels.names():
        if name == KERNEL or VARIANT_SEPARATOR in name:
            continue
        row = Row("jit", f"first call, {name}", 0)
        try:
            cold, warm, records = ours_cold_warm(binary, env, name, 1)
            row.results[COLD] = Result(COLD, cold, check=_phases(records, "cold"))
            row.results[WARM] = Result(WARM, warm, check=_phases(records, "warm"))
        except Exception as err:
            row.results[COLD] = Result(COLD, status=f"error: {err}"[:300])
        rows.append(row)
    return rows


def _phases(records: list[dict], mode: str) -> str:
    """The median trial's phases, e.g. "lower 0.2 compile 95.1 load 0.3 launch 0.1 ms, compiled 1"."""
    picked = sorted((r for r in records if r["mode"] == mode), key=lambda r: r["first_call_ms"])
    r = picked[len(picked) // 2]
    return (f"lower {r['lower_ms']:.1f} compile {r['compile_ms']:.1f} load {r['load_ms']:.1f} "
            f"launch {r['launch_ms']:.1f} ms, compiled {r['compiled']}")


def run(ctx: Context) -> list[Row]:
    trials = 1 if ctx.quick else 3
    shape = f"first call, RMSNorm rows={ROWS} hidden={HIDDEN}"
    cold_row = Row("jit", f"cold: {shape}", 0)
    warm_row = Row("jit", f"warm cache: {shape}", 0)
    try:
        cold, warm = _triton(trials)
        cold_row.results["triton"] = Result("triton", cold)
        warm_row.results["triton"] = Result("triton", warm)
    except Exception as err:
        for row in (cold_row, warm_row):
            row.results["triton"] = Result("triton", status=f"error: {err}")
    binary, env = find_monotile()
    more = _ours_rows(ctx, binary, env, cold_row, warm_row)
    if ctx.kernels.has(KERNEL):
        try:
            samples = [
                _probe(["ours", str(ctx.kernels.path.resolve()), KERNEL, str(ROWS), str(HIDDEN)], dict(os.environ))["first_call_ms"]
                for _ in range(trials)
            ]
            warm_row.results[f"{OURS} cubin"] = Result(f"{OURS} cubin", _timing(samples))
        except Exception as err:
            warm_row.results[f"{OURS} cubin"] = Result(f"{OURS} cubin", status=f"error: {err}")
    return [cold_row, warm_row, *more]
