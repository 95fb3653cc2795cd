"""The stock KDA half peer (bench/peers/vllm_kda_half.py) and its check, on the CPU.

Fast: the peer's chain with torch stand-ins for vLLM's four kernels (same signatures), so that the
harness logic is tested anywhere torch is: the check passes a correct chain and fails one whose
conv update writes the null block, whose recurrence leaves a row unwritten, or whose gated norm
drops its gate. Slow (two to four minutes, skipped without `.peers/vllm_stock` or where Triton's
interpreter cannot run): vLLM's own kernels, unpacked from its wheel and loaded through the shims,
under Triton's interpreter at N = 2, q = 2, checked against float64 including the padded request.
"""

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from bench.kda_half_report import PROJECTION  # noqa: E402
from bench.kda_inputs import as_numpy  # noqa: E402
from bench.kda_reference import kda_verify_reference  # noqa: E402
from bench.peers.vllm_kda_half import Stock  # noqa: E402
from bench.peers.vllm_shims import StockKernels, default_peers_dir  # noqa: E402
from bench.peers.vllm_wheel import STOCK_DIR  # noqa: E402
from conftest import INTERPRETER_SKIP, interpreter_works  # noqa: E402


def _attn_res(prefix, delta, blocks, norm_weight, qk_weight, output_norm_weight, num_blocks, block_write_idx, eps,
              output_norm_eps):
    prefix.add_(delta)
    sources = torch.cat((blocks[:, :num_blocks], prefix.unsqueeze(1)), 1).float()
    logits = (sources * (norm_weight.float() * qk_weight.float())).sum(-1) * torch.rsqrt(
        sources.pow(2).mean(-1) + eps)
    mixed = (torch.softmax(logits, 1).unsqueeze(-1) * sources).sum(1)
    return (mixed * torch.rsqrt(mixed.pow(2).mean(-1, keepdim=True) + output_norm_eps)
            * output_norm_weight.float()).to(prefix.dtype)


def _conv(x, conv_state, weight, bias, activation, conv_state_indices, num_accepted_tokens, query_start_loc,
          max_query_len, validate_data, out, write_null_block=False):
    """conv_state viewed (slots, dim, state); a request whose slot is 0 is skipped."""
    q = max_query_len
    for r, slot in enumerate(conv_state_indices.tolist()):
        if slot == 0 and not write_null_block:
            continue
        start = int(num_accepted_tokens[r]) - 1
        rows = slice(int(query_start_loc[r]), int(query_start_loc[r + 1]))
        seq = torch.cat((conv_state[slot, :, start:start + 3].t(), x[rows]), 0).float()  # [q + 3, dim]
        acc = sum(seq[j:j + q] * weight[:, j] for j in range(4))
        out[rows] = torch.nn.functional.silu(acc).to(out.dtype)
        conv_state[slot, :, :q + 2] = seq[1:].t().to(conv_state.dtype)
    return out


def _recurrence(q, k, v, raw_g, raw_beta, A_log, dt_bias, lower_bound, initial_state, cu_seqlens, ssm_state_indices,
                num_accepted_tokens, out, skip_last_row=False):
    o, after = kda_verify_reference(as_numpy(q[0]), as_numpy(k[0]), as_numpy(v[0]), as_numpy(raw_g[0]),
                                    as_numpy(raw_beta[0]), as_numpy(A_log), as_numpy(dt_bias),
                                    as_numpy(initial_state), as_numpy(ssm_state_indices),
                                    as_numpy(num_accepted_tokens))
    rows = o.shape[0] - (1 if skip_last_row else 0)
    out[0, :rows] = torch.from_numpy(o[:rows]).to(out.dtype)
    initial_state.copy_(torch.from_numpy(after).to(initial_state.dtype))
    return out, initial_state


class _Norm(torch.nn.Module):
    gated = True

    def __init__(self, hidden, eps, activation, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.empty(hidden, device=device, dtype=dtype))

    def forward(self, x, g):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight.float()
        if self.gated:
            y = y * torch.sigmoid(g.float())
        return y.to(x.dtype)


def _kernels(**broken) -> StockKernels:
    conv = lambda *a, **kw: _conv(*a, **kw, write_null_block=broken.get("null_block", False))  # noqa: E731
    rec = lambda *a, **kw: _recurrence(*a, **kw, skip_last_row=broken.get("row", False))  # noqa: E731
    norm = type("Norm", (_Norm,), {"gated": not broken.get("gate", False)})
    return StockKernels(_attn_res, conv, rec, norm, Path("stand-ins"))


def test_a_correct_chain_passes_with_the_padded_request():
    text = Stock(_kernels(), 2, 2, "cpu", 0).check()
    assert text.startswith("ok attn_res"), text
    for part in ("conv ", "rec o ", "norm ", "o_proj ", "padded: slot 0 untouched"):
        assert part in text, text


def test_a_conv_that_writes_the_null_block_fails():
    text = Stock(_kernels(null_block=True), 2, 2, "cpu", 0).check()
    assert text.startswith("FAIL padded: the conv update wrote slot 0 (NULL_BLOCK_ID)"), text


def test_a_recurrence_that_leaves_a_row_unwritten_fails():
    text = Stock(_kernels(row=True), 1, 4, "cpu", 0).check()
    assert text.startswith("FAIL ") and "norm FAIL non-finite" in text, text


def test_a_norm_without_its_gate_fails():
    text = Stock(_kernels(gate=True), 1, 2, "cpu", 0).check()
    assert text.startswith("FAIL norm FAIL"), text


def test_the_chain_hands_the_recurrence_vllms_layouts():
    seen = {}

    def rec(**kw):
        seen.update(kw)
        return _recurrence(**kw)

    kernels = _kernels()
    kernels.fused_recurrent_kda = rec
    stock = Stock(kernels, 2, 2, "cpu", 0)
    stock.step(0)
    t = 4
    assert seen["q"].shape == (1, t, 12, 128) and seen["q"].stride()[1:] == (3 * PROJECTION, 128, 1)
    assert seen["raw_beta"].shape == (1, t, 12) and seen["raw_beta"].stride(1) == 6288  # a view of in_proj
    assert seen["raw_g"].shape == (1, t, 12, 128) and seen["lower_bound"] == -5.0
    assert seen["ssm_state_indices"].shape == (2, 2) and seen["cu_seqlens"].tolist() == [0, 2, 4]
    assert seen["out"].shape == (1, t, 12, 128)


STOCK_ROOT = default_peers_dir() / STOCK_DIR


@pytest.mark.skipif(not STOCK_ROOT.is_dir(), reason=f"{STOCK_ROOT} absent: python3 -m bench.peers.vllm_wheel WHEEL .peers")
@pytest.mark.skipif(not interpreter_works(), reason=INTERPRETER_SKIP)
@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="needs Triton's interpreter (conftest.py)")
def test_vllms_kernels_under_the_interpreter_match_float64():
    from bench.peers.vllm_shims import load_stock_kernels

    text = Stock(load_stock_kernels(default_peers_dir()), 2, 2, "cpu", 0).check()
    assert text.startswith("ok attn_res") and "padded: slot 0 untouched" in text, text



def _fake_timer(steps, copies, repeats):
    from bench.timing import Timing

    timings = {}
    for n, (name, step) in enumerate(steps.items()):
        step(0)
        timings[name] = Timing(40.0 + 10 * n, 39.0, 41.0 + 10 * n, launches=1, copies=copies)
    return timings


def test_the_table_times_the_stock_half_beside_ours(tmp_path, monkeypatch):
    import json

    from bench.kda_half_report import half_bytes
    from bench.measure import Context
    from bench.monotile_kernels import KernelDir
    from bench.report import OURS
    from bench.tables import kda_half

    shape = {"name": "k3_k1_t4_q2", "N": 2, "q": 2, "T": 4, "gemv": "g", "k1_bytes": 1, "bytes": half_bytes(2, 2),
             "k1_median_us": 18.0, "k1_best_us": 17.0, "k1_floor_us": 15.0, "half_median_us": 20.0,
             "half_best_us": 19.5, "floor_us": 16.0}
    path = tmp_path / "k1.json"
    path.write_text(json.dumps({"gpu": True, "device": "NVIDIA H100 80GB HBM3", "copy_bandwidth_bytes_per_s": 3e12,
                                "shapes": [shape]}))
    logged = []
    ctx = Context(KernelDir(None), device="cpu", copy_bandwidth=3e12, timer=_fake_timer, log=logged.append, l2=0)
    ctx.shapes.update(kda_half=[(2, 2)], k1_json=str(path))
    monkeypatch.setattr(kda_half, "_stock", lambda ctx: _kernels())
    monkeypatch.setattr(kda_half, "fla_version", lambda: None)
    [row] = kda_half.run(ctx)
    stock = row.results[kda_half.STOCK]
    assert stock.timing.median_us == 40.0 and stock.check.startswith("ok attn_res"), stock.check
    assert "padded: slot 0 untouched" in stock.check
    assert row.results[kda_half.UNFUSED].status == "fla not installed"
    assert row.results[OURS].timing.median_us == 20.0
    table = logged[-1]
    assert "N=2 q=2 T=4" in table and "40.00" in table and "2.00" in table  # stock / ours = 40 / 20
    assert "fla not installed" in table and "check N=2 q=2 stock: ok attn_res" in table


def test_a_stock_peer_that_cannot_load_says_why(monkeypatch):
    from bench.measure import Context
    from bench.monotile_kernels import KernelDir
    from bench.tables import kda_half

    logged = []
    ctx = Context(KernelDir(None), device="cpu", copy_bandwidth=3e12, timer=_fake_timer, log=logged.append, l2=0)
    ctx.shapes.update(kda_half=[(1, 2)], stock_peers="/nonexistent")
    monkeypatch.setattr(kda_half, "fla_version", lambda: None)
    [row] = kda_half.run(ctx)
    status = row.results[kda_half.STOCK].status
    assert status == ("could not run: StockImportError: /nonexistent/vllm_stock: no such folder (vLLM 0.33.0's "
                      "stock KDA files are not unpacked); hint: python3 -m bench.peers.vllm_wheel VLLM_WHEEL .peers "
                      "(docs/bench.md)"), status
    assert "could not run: StockImportError" in logged[0]
