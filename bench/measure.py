"""Measures one row: checks every implementation on copy 0 of the inputs, times the ones that pass
their launch (interleaved, same inputs), and checks again after the graph replays.

Invariant: a failure of one implementation (a missing export, a driver error, a compile error) is
recorded in its result and never stops the others or the run; a number is printed only when it
was measured.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from bench.monotile_kernels import KernelDir, Op
from bench.report import OURS, Result, Row
from bench.timing import DEFAULT_REPEATS, Step, Timing, l2_bytes, time_interleaved

# check(impl, after_timing) -> "ok <error>" or "FAIL ..."; it runs the step itself when needed.
Check = Callable[[str, bool], str]
Timer = Callable[..., dict[str, Timing]]
VARIANT_SEPARATOR = "__"  # <kernel>__<label>: another version of <kernel>, measured beside it


@dataclass
class Context:
    """What every table needs: our kernels, the device, the floor reference and the run options."""

    kernels: KernelDir
    device: str = "cuda"
    copy_bandwidth: float = 0.0
    repeats: int = DEFAULT_REPEATS
    quick: bool = False
    shapes: dict[str, Any] = field(default_factory=dict)  # per-table overrides (tests use tiny ones)
    timer: Timer = time_interleaved
    log: Callable[[str], None] = lambda text: print(text, flush=True)
    l2: int | None = None

    def l2_bytes(self) -> int:
        if self.l2 is None:
            self.l2 = l2_bytes()
        return self.l2

    def variants(self, name: str) -> dict[str, tuple[Op | None, str]]:
        """Our other exported versions of kernel `name` (exported as `<name>__<label>`), by the
        implementation name they are reported under (`ours:<label>`): alternatives measured side by
        side with ours on the same inputs, so one run compares them."""
        lister = getattr(self.kernels, "names", None)
        found = {}
        for exported in (lister() if lister else []):
            if exported.startswith(name + VARIANT_SEPARATOR):
                found[f"{OURS}:{exported[len(name) + len(VARIANT_SEPARATOR):]}"] = self.ours(exported)
        return found

    def ours(self, name: str) -> tuple[Op | None, str]:
        """Our exported kernel `name`, or None and why not ("not exported", "error: ...")."""
        if not self.kernels.has(name):
            return None, "not exported"
        try:
            return self.kernels.load(name, self.device), "ok"
        except Exception as err:  # a bad export must not stop the run
            return None, f"error: {err}"


def compare(actual: torch.Tensor, expected: torch.Tensor, tolerance: float) -> str:
    """Returns "ok <err>" when ||actual - expected|| / ||expected|| <= tolerance, else "FAIL <err>";
    a NaN (an unwritten, poisoned element) or an infinity always fails."""
    a = actual.double()
    e = expected.double()
    if not torch.isfinite(a).all():
        return "FAIL non-finite output (unwritten or overflowed)"
    err = ((a - e).norm() / e.norm().clamp_min(1e-30)).item()
    return f"{'ok' if err <= tolerance else 'FAIL'} {err:.1e}"


def _error(err: BaseException) -> str:
    return f"error: {type(err).__name__}: {err}".splitlines()[0][:300]


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def measure_row(
    ctx: Context,
    table: str,
    shape: str,
    nbytes: int,
    copies: int,
    steps: dict[str, Step],
    check: Check,
    flops: int = 0,
    ours_status: str | None = None,
    absent: dict[str, str] | None = None,
) -> Row:
    """steps maps implementation names to launchers; ours_status says why "ours" is absent, and
    absent why other implementations (e.g. our variants that failed to load) are."""
    row = Row(table, shape, nbytes, flops)
    if ours_status is not None and OURS not in steps:
        row.results[OURS] = Result(OURS, status=ours_status)
    runnable: dict[str, Step] = {}
    for name, step in steps.items():
        result = row.results.setdefault(name, Result(name))
        try:
            result.check = check(name, False)
            _synchronize(ctx.device)
            runnable[name] = step
        except Exception as err:
            result.status = _error(err)
            ctx.log(f"  {table} {shape} {name}: {result.status}")
            if ctx.device.startswith("cuda"):
                ctx.log(traceback.format_exc(limit=3))
    for name, status in (absent or {}).items():
        if name not in steps:
            row.results[name] = Result(name, status=status)
    if runnable:
        for name, timing in _time(ctx, runnable, copies, row).items():
            row.results[name].timing = timing
    for name in runnable:
        if row.results[name].timing is None:
            continue
        try:
            after = check(name, True)
            if not after.startswith("ok"):
                row.results[name].check += f" | after timing: {after}"
        except Exception as err:
            row.results[name].check += f" | after timing: {_error(err)}"
    return row


def _time(ctx: Context, steps: dict[str, Step], copies: int, row: Row) -> dict[str, Timing]:
    """Interleaved timing; if that fails, each implementation alone, so one bad one costs only itself."""
    try:
        return ctx.timer(steps, copies, repeats=ctx.repeats)
    except Exception as err:
        ctx.log(f"  {row.table} {row.shape}: interleaved timing failed ({_error(err)}); timing each alone")
    timings = {}
    for name, step in steps.items():
        try:
            timings[name] = ctx.timer({name: step}, copies, repeats=ctx.repeats)[name]
        except Exception as err:
            row.results[name].status = _error(err)
    return timings
