"""JIT: time to the first result of a small RMSNorm kernel in a fresh process.

Triton cold: a fresh TRITON_CACHE_DIR (compile, including Triton's launcher stub). Triton warm: a
second fresh process on the cache the cold one filled. Ours warm: loading our exported CUBIN and
its first launch. Our cold compile (NVRTC through the monotile cache) is timed by the monotile
tool, not here: this harness has no C++ JIT. Each number is the median of a few fresh processes.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.measure import Context
from bench.report import OURS, Result, Row
from bench.timing import Timing

ROWS, HIDDEN = 4, 7168
KERNEL = f"rmsnorm_rows{ROWS}_h{HIDDEN}"
KERNELS = {}  # reuses the rmsnorm export
REPO_ROOT = Path(__file__).resolve().parents[2]


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
    cold_row.results[OURS] = Result(OURS, status="by the monotile tool")
    if ctx.kernels.has(KERNEL):
        try:
            samples = [
                _probe(["ours", str(ctx.kernels.path.resolve()), KERNEL, str(ROWS), str(HIDDEN)], dict(os.environ))["first_call_ms"]
                for _ in range(trials)
            ]
            warm_row.results[OURS] = Result(OURS, _timing(samples))
        except Exception as err:
            warm_row.results[OURS] = Result(OURS, status=f"error: {err}")
    else:
        warm_row.results[OURS] = Result(OURS, status="not exported")
    return [cold_row, warm_row]
