"""A tiny tuner for the Triton peers: time a handful of candidate configs on the real inputs and
keep the fastest. Candidates come from a heuristic, so the first one is already a good default.

Invariant: tuning runs before graph capture (do_bench synchronizes and flushes the L2 between runs).
A candidate that fails to compile or launch (e.g. out of shared memory) is skipped, not fatal.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence


def pick_fastest(candidates: Sequence[Any], run_with: Callable[[Any], Callable[[], None]], quick: bool) -> Any:
    """Returns the candidate whose runner has the lowest median time; the first one when quick or
    when there is only one (no timing at all then). Raises only if every candidate fails."""
    if quick or len(candidates) == 1:
        return candidates[0]
    import triton.testing

    best, best_ms, errors = None, float("inf"), []
    for candidate in candidates:
        try:
            ms = triton.testing.do_bench(run_with(candidate), warmup=5, rep=25, return_mode="median")
        except Exception as err:  # one bad config must not cost the row its peer
            errors.append(f"{candidate}: {type(err).__name__}: {err}")
            continue
        if ms < best_ms:
            best, best_ms = candidate, ms
    if best is None:
        raise RuntimeError("every candidate config failed: " + "; ".join(errors))
    return best
