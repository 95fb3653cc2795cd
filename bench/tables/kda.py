"""KDA speculative-verify recurrence, ours against fla's fused_recurrent_kda (q = 4 tokens a request).

Per row, before timing: both implementations are checked against the float64 reference on inputs
with a padded state slot stride, twice: all requests real, and (N >= 2) the last request padding
(every slot 0, one accepted token). fla is checked on the real requests only (kda_check.py).
Bytes: one state read and q state writes per request and head, plus the activations.
"""

from __future__ import annotations

import itertools

import torch

from bench.kda_check import check_kda, reference_for
from bench.kda_inputs import KdaInputs, as_numpy, clone_state, compulsory_bytes, make_kda_inputs
from bench.measure import Context, measure_row
from bench.peers.fla_kda import fla_kda_verify, fla_version
from bench.report import OURS, Result, Row
from bench.timing import copies_for

HEADS = (12, 32, 96)
REQUESTS = (1, 2, 4, 8, 16)
Q_LEN = 4
KERNELS = {
    f"kda_verify_h{h}_n{n}_q{Q_LEN}": (
        "q, k, v, g (ptr<bf16> [T, H, 128]), beta (ptr<bf16> [T, H]), a_log (ptr<f32> [H]), "
        "dt_bias (ptr<f32> [H*128]), state (ptr<f32> [slots, H, 128, 128]), slot_stride (elements), "
        "state_indices (ptr<i32> [N, q]), num_accepted (ptr<i32> [N]), query_start (ptr<i32> [N+1]), "
        "o (ptr<bf16> [T, H, 128]), T, N, heads"
    )
    for h, n in itertools.product(HEADS, REQUESTS)
}


def _ours_values(inputs: KdaInputs, state: torch.Tensor, out: torch.Tensor) -> dict:
    return {
        "q": inputs.q, "k": inputs.k, "v": inputs.v, "g": inputs.g, "beta": inputs.beta,
        "a_log": inputs.a_log, "dt_bias": inputs.dt_bias, "state": state, "slot_stride": state.stride(0),
        "state_indices": inputs.state_indices, "num_accepted": inputs.num_accepted,
        "query_start": inputs.query_start, "o": out,
        "T": inputs.q.shape[0], "N": inputs.requests, "heads": inputs.heads,
    }


def _is_ours(name: str) -> bool:
    """ours or one of its variants (ours:<label>)."""
    return name == OURS or name.startswith(OURS + ":")


def _launcher(name: str, op):
    """impl name -> f(inputs, state, out) running one verify step."""
    if _is_ours(name):
        return lambda inputs, state, out: op(_ours_values(inputs, state, out))
    return fla_kda_verify


def _check_sets(ctx: Context, requests: int, heads: int, seed: int) -> list[KdaInputs]:
    head_dim = ctx.shapes.get("kda_head_dim", 128)
    sets = [make_kda_inputs(requests, heads, Q_LEN, padded=0, head_dim=head_dim, slot_pad_heads=1,
                            device=ctx.device, seed=seed)]
    if requests >= 2:
        sets.append(make_kda_inputs(requests - 1, heads, Q_LEN, padded=1, head_dim=head_dim, slot_pad_heads=1,
                                    device=ctx.device, seed=seed + 1))
    return sets


def _check_once(name: str, run, inputs: KdaInputs, reference, state_before) -> str:
    state = clone_state(inputs.state)
    out = torch.full_like(inputs.v, float("nan"))
    run(inputs, state, out)
    rules = "ours" if _is_ours(name) else "fla"
    return check_kda(rules, inputs, out, state, reference, state_before).summary()


def run(ctx: Context) -> list[Row]:
    rows = []
    have_fla = fla_version() is not None
    head_dim = ctx.shapes.get("kda_head_dim", 128)
    for heads, requests in ctx.shapes.get("kda", list(itertools.product(HEADS, REQUESTS))):
        timing_inputs = make_kda_inputs(requests, heads, Q_LEN, device=ctx.device, head_dim=head_dim, seed=7)
        per_copy = timing_inputs.state.numel() * 4 + compulsory_bytes(requests, heads, Q_LEN, head_dim)
        copies = copies_for(per_copy, ctx.l2_bytes())
        kernel = f"kda_verify_h{heads}_n{requests}_q{Q_LEN}"
        op, status = ctx.ours(kernel)
        ours = {OURS: op} if op else {}
        variants = ctx.variants(kernel)
        ours.update({name: v_op for name, (v_op, _) in variants.items() if v_op is not None})
        absent = {name: v_status for name, (v_op, v_status) in variants.items() if v_op is None}
        names = [*ours] + (["fla"] if have_fla else [])
        states = {name: [clone_state(timing_inputs.state) for _ in range(copies)] for name in names}
        outs = {name: [torch.empty_like(timing_inputs.v) for _ in range(copies)] for name in names}
        runs = {name: _launcher(name, ours.get(name)) for name in names}
        steps = {name: (lambda i, name=name: runs[name](timing_inputs, states[name][i], outs[name][i])) for name in names}
        check_sets = _check_sets(ctx, requests, heads, seed=requests * 1000 + heads)
        references = [reference_for(s) for s in check_sets]
        befores = [as_numpy(s.state) for s in check_sets]

        def check(name: str, after: bool) -> str:
            # After timing the graph replays have evolved the state, so re-run on fresh copies.
            results = [_check_once(name, runs[name], s, ref, before)
                       for s, ref, before in zip(check_sets, references, befores)]
            failed = [r for r in results if not r.startswith("ok")]
            return failed[0] if failed else results[-1]

        shape = f"H={heads} N={requests} q={Q_LEN}"
        row = measure_row(ctx, "kda", shape, compulsory_bytes(requests, heads, Q_LEN, head_dim), copies, steps, check,
                          ours_status=None if op else status, absent=absent)
        if not have_fla:
            row.results["fla"] = Result("fla", status="fla not installed")
        rows.append(row)
        if ctx.device.startswith("cuda"):
            torch.cuda.empty_cache()
    return rows
