"""Checks one KDA implementation's outputs and stored states against the float64 reference.

Two rule sets: "ours" must follow the reference everywhere (padded requests: zero output rows,
slot 0 never written); "fla" has no "no state" rule (it reads and writes slot 0 for padded
requests), so it is compared on the real requests' rows and on every slot but 0.
Tolerances (norm-wise relative error): bf16 outputs 1e-2, fp32 states 1e-3. NaN never passes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bench.kda_inputs import KdaInputs, as_numpy
from bench.kda_reference import kda_verify_reference

OUTPUT_TOLERANCE = 1e-2
STATE_TOLERANCE = 1e-3


@dataclass
class KdaCheck:
    ok: bool
    output_error: float
    state_error: float
    problems: list[str]

    def summary(self) -> str:
        head = "ok" if self.ok else "FAIL"
        text = f"{head} o {self.output_error:.1e} S {self.state_error:.1e}"
        return text if self.ok else f"{text}: {'; '.join(self.problems)}"


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """||actual - expected|| / ||expected||; inf when actual has a NaN or an infinity."""
    if not np.all(np.isfinite(actual)):
        return float("inf")
    denom = np.linalg.norm(expected)
    diff = np.linalg.norm(actual - expected)
    return float(diff / denom) if denom > 0 else float(diff)


def reference_for(inputs: KdaInputs) -> tuple[np.ndarray, np.ndarray]:
    """The float64 reference of these inputs (state as it is before the step)."""
    return kda_verify_reference(
        as_numpy(inputs.q), as_numpy(inputs.k), as_numpy(inputs.v), as_numpy(inputs.g), as_numpy(inputs.beta),
        as_numpy(inputs.a_log), as_numpy(inputs.dt_bias), as_numpy(inputs.state),
        as_numpy(inputs.state_indices), as_numpy(inputs.num_accepted),
    )


def check_kda(
    rules: str,
    inputs: KdaInputs,
    out: torch.Tensor,
    state_after: torch.Tensor,
    reference: tuple[np.ndarray, np.ndarray],
    state_before: np.ndarray,
) -> KdaCheck:
    """Compares `out` [T, H, V] and `state_after` with the reference; rules is "ours" or "fla"."""
    if rules not in ("ours", "fla"):
        raise ValueError(f'check_kda: rules must be "ours" or "fla", got "{rules}"')
    ref_out, ref_state = reference
    o = as_numpy(out)
    s = as_numpy(state_after)
    rows = inputs.valid * inputs.q_len
    problems = []
    output_error = relative_error(o[:rows], ref_out[:rows])
    if output_error > OUTPUT_TOLERANCE:
        problems.append(f"real requests' outputs off by {output_error:.2e}")
    slots = slice(1, None) if rules == "fla" else slice(None)
    state_error = relative_error(s[slots], ref_state[slots])
    if state_error > STATE_TOLERANCE:
        problems.append(f"stored states off by {state_error:.2e}")
    if rules == "ours":
        padded_rows = o[rows:]
        if padded_rows.size and not np.all(padded_rows == 0.0):
            problems.append("padded requests' output rows are not all zero")
        if not np.array_equal(s[0], state_before[0], equal_nan=True):
            problems.append("slot 0 (no state) was written")
    return KdaCheck(not problems, output_error, state_error, problems)
