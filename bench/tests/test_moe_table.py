"""The K2 MoE table's CPU-testable parts: k2_bench's --json, the MXFP4 dequantization against hand
values, SiTU, the route, the ratios, the "could not run" path, and the table end to end at tiny
shapes with a stand-in timer (the unfused peer runs on the CPU; triton_kernels cannot)."""

import json
import math

import pytest

torch = pytest.importorskip("torch")

from bench.measure import Context  # noqa: E402
from bench.monotile_kernels import KernelDir  # noqa: E402
from bench.peers import moe_mxfp4  # noqa: E402
from bench.peers.moe_mxfp4 import DequantMoE, dequant_mxfp4, moe_reference, select_experts, situ  # noqa: E402
from bench.report import OURS  # noqa: E402
from bench.tables import moe  # noqa: E402
from bench.timing import Timing  # noqa: E402

TINY = moe.Dims(hidden=256, core=64, experts=32, top_k=4, latent=256, expert_rows=64, shared_rows=64, up_rows=32)


def k2_doc(**extra):
    doc = {
        "gpu": True, "device": "NVIDIA H200", "programs": 132, "iterations": 50,
        "copy_bandwidth_bytes_per_s": 4.2e12, "l2_flushed": True,
        "shapes": [{"name": f"k3_k2_t{t}", "T": t, "distinct_experts": 60 + t, "bytes": 300_000_000 + t,
                    "median_us": 100.0 + t, "best_us": 95.0 + t, "floor_us": 70.0 + t} for t in (4, 8, 16)],
    }
    doc.update(extra)
    return doc


def test_k2_json_is_read_by_t():
    run = moe.parse_k2_json(json.dumps(k2_doc()))
    assert run.gpu and run.device == "NVIDIA H200" and run.copy_bandwidth == 4.2e12
    assert sorted(run.shapes) == [4, 8, 16]
    shape = run.shapes[8]
    assert (shape.name, shape.distinct, shape.nbytes, shape.median_us, shape.best_us, shape.floor_us) == (
        "k3_k2_t8", 68, 300_000_008, 108.0, 103.0, 78.0)


def test_k2_json_without_a_gpu_says_why():
    run = moe.parse_k2_json('{\n "gpu": false,\n "reason": "no GPU: no driver",\n "shapes": [\n ]\n}\n')
    assert not run.gpu and run.reason == "no GPU: no driver" and run.shapes == {}


@pytest.mark.parametrize("text, message", [
    ("not json", "not JSON"),
    ("[]", "expected an object"),
    ('{"shapes": []}', 'no "gpu"'),
    (json.dumps(k2_doc(copy_bandwidth_bytes_per_s="fast")), "expected float"),
    (json.dumps(k2_doc(shapes=[{"name": "x", "T": 4}])), 'no "distinct_experts"'),
    (json.dumps(k2_doc(shapes=[dict(k2_doc()["shapes"][0], T=True)])), "expected int"),
])
def test_a_malformed_k2_json_is_refused_with_what_is_wrong(text, message):
    with pytest.raises(moe.K2JsonError, match=message):
        moe.parse_k2_json(text)


def test_k2_bytes_count_the_distinct_experts_mxfp4_bytes():
    d = moe.K3
    per_expert = 768 * 3584 // 2 + 768 * 3584 // 32 + 3584 * 384 // 2 + 3584 * 384 // 32
    assert moe.k2_bytes(d, 4, 61) - moe.k2_bytes(d, 4, 60) == per_expert == 2_193_408
    dense = 7168 * 1536 * 2 + 896 * 7168 * 2 + 896 * 4 + 3584 * 7168 * 2 + 3 * 768 * 7168 * 2 + 896 * 3584 * 2
    norms = 3 * 7168 * 2 + 3584 * 2
    activations = 4 * 1536 * 2 + 4 * 7168 * 2 * 2 + 4 * 2 * 7168 * 2 + 4 * 7168 * 2
    assert moe.k2_bytes(d, 4, 0) == dense + norms + activations


def test_dequant_mxfp4_against_hand_values():
    # Row 0: bytes 0x21 -> (0.5, 1.0), 0xf9 -> (-0.5, -6), then zeros; its 32 values scaled by 2^(126-127).
    # Row 1: bytes 0x7f -> (-6, 6), 0x8c -> (-2, -0), 0x35 -> (3, 1.5); scale code 130 -> 8.
    packed = torch.zeros(2, 16, dtype=torch.uint8)
    packed[0, :2] = torch.tensor([0x21, 0xF9], dtype=torch.uint8)
    packed[1, :3] = torch.tensor([0x7F, 0x8C, 0x35], dtype=torch.uint8)
    scales = torch.tensor([[126], [130]], dtype=torch.uint8)
    expected = torch.zeros(2, 32, dtype=torch.float64)
    expected[0, :4] = torch.tensor([0.5, 1.0, -0.5, -6.0]) * 0.5
    expected[1, :6] = torch.tensor([-6.0, 6.0, -2.0, -0.0, 3.0, 1.5]) * 8
    for dtype in (torch.float64, torch.float32, torch.bfloat16):
        got = dequant_mxfp4(packed, scales, dtype)
        assert got.dtype == dtype and got.shape == (2, 32)
        assert torch.equal(got.double(), expected)
    assert math.copysign(1.0, dequant_mxfp4(packed, scales)[1, 3].item()) == -1.0  # -0 kept


def test_dequant_mxfp4_one_scale_per_32_inputs_and_the_nan_code():
    packed = torch.full((1, 32), 0x22, dtype=torch.uint8)  # every element 1.0
    scales = torch.tensor([[127, 0]], dtype=torch.uint8)
    got = dequant_mxfp4(packed, scales, torch.float64)
    assert torch.equal(got[0, :32], torch.ones(32, dtype=torch.float64))
    assert torch.equal(got[0, 32:], torch.full((32,), 2.0 ** -127, dtype=torch.float64))
    assert torch.isnan(dequant_mxfp4(packed[:, :16], torch.tensor([[255]], dtype=torch.uint8))).all()
    with pytest.raises(ValueError, match="need scales"):
        dequant_mxfp4(packed, scales[:, :1])


def test_situ_is_the_k3_activation():
    g = torch.tensor([-3.0, 0.0, 0.7, 40.0], dtype=torch.float64)
    u = torch.tensor([2.0, 5.0, -80.0, 1.0], dtype=torch.float64)
    expected = [4 * math.tanh(a / 4) / (1 + math.exp(-a)) * 25 * math.tanh(b / 25)
                for a, b in zip(g.tolist(), u.tolist())]
    assert torch.allclose(situ(g, u), torch.tensor(expected, dtype=torch.float64), rtol=1e-12, atol=0)
    # Bounded: |gate| < 4, |up| < 25 (no clamp needed).
    assert situ(torch.tensor([1e4]), torch.tensor([1e4])).item() == pytest.approx(100.0)


def test_the_route_takes_the_biased_top_k_and_the_unbiased_weights():
    logits = torch.tensor([[0.0, 2.0, -1.0, 1.0]])
    bias = torch.tensor([0.0, 0.0, 5.0, 0.0])
    ids, weights = select_experts(logits, bias, 2)
    assert ids.tolist() == [[2, 1]]  # expert 2 only through its bias
    s = torch.sigmoid(torch.tensor([-1.0, 2.0]))
    assert torch.allclose(weights, (s / s.sum()).unsqueeze(0))


def test_the_unfused_moe_matches_the_float64_reference():
    report = moe.small_case(DequantMoE, "cpu")
    assert report.startswith("ok"), report
    assert float(report.split()[1]) < 1e-2


def test_the_reference_sums_each_token_over_its_experts():
    gen = torch.Generator().manual_seed(3)
    experts = moe.Experts(moe.SMALL, "cpu", gen)
    lat = torch.randn(2, moe.SMALL.latent, generator=gen).to(torch.bfloat16)
    ids = torch.tensor([[3, 7, 1, 0], [7, 2, 5, 9]])
    weights = torch.full((2, 4), 0.25)
    whole = moe_reference(lat, ids, weights, *experts.tensors())
    one = moe_reference(lat[1:], ids[1:, :1], weights[1:, :1], *experts.tensors())
    rest = moe_reference(lat[1:], ids[1:, 1:], weights[1:, 1:], *experts.tensors())
    assert torch.allclose(whole[1:], one + rest)


def _routes(experts: int, top_k: int, seed: int = 3) -> dict[int, list[list[int]]]:
    gen = torch.Generator().manual_seed(seed)
    return {t: [torch.randperm(experts, generator=gen)[:top_k].tolist() for _ in range(t)] for t in (4, 8, 16)}


def test_k2_json_route_is_read_and_checked():
    routes = _routes(896, 16)
    doc = k2_doc()
    for shape in doc["shapes"]:
        shape["route"] = routes[shape["T"]]
    run = moe.parse_k2_json(json.dumps(doc))
    assert run.shapes[8].route == routes[8]
    assert moe.parse_k2_json(json.dumps(k2_doc())).shapes[4].route is None  # an older file: no route
    for bad in (routes[8], [[1, 1] + routes[4][0][2:]] + routes[4][1:], [[-1] + routes[4][0][1:]] + routes[4][1:],
                [routes[4][0][:3]] + routes[4][1:]):
        doc["shapes"][0]["route"] = bad
        with pytest.raises(moe.K2JsonError, match='"route" must be 4 rows of the same number of distinct expert ids'):
            moe.parse_k2_json(json.dumps(doc))


def test_the_peers_run_k2_benchs_route(tmp_path):
    logged = []
    routes = _routes(TINY.experts, TINY.top_k)
    doc = k2_doc()
    for shape in doc["shapes"]:
        shape["route"] = routes[shape["T"]]
        shape["distinct_experts"] = len({e for row in routes[shape["T"]] for e in row})
    ctx = tiny_context(tmp_path, doc, peers={moe.UNFUSED: DequantMoE})
    ctx.log = logged.append
    rows = moe.run(ctx)
    for row in rows:
        tokens = int(row.shape.split()[0][2:])
        distinct = len({e for r in routes[tokens] for e in r})
        assert row.shape == f"T={tokens} experts={distinct}"
        assert row.nbytes == moe.k2_bytes(TINY, tokens, distinct)
        assert row.results[moe.UNFUSED].check.startswith("ok"), row.results[moe.UNFUSED].check
    assert "its own random route, which the peers run too" in logged[-1]
    assert not any("distinct experts, its file says" in line for line in logged)


def test_a_route_that_does_not_fit_the_dims_is_not_used(tmp_path):
    logged = []
    doc = k2_doc()
    for shape in doc["shapes"]:
        shape["route"] = [[TINY.experts + i for i in range(TINY.top_k)] for _ in range(shape["T"])]
    ctx = tiny_context(tmp_path, doc, peers={moe.UNFUSED: DequantMoE})
    ctx.log = logged.append
    rows = moe.run(ctx)
    assert rows[0].results[moe.UNFUSED].check.startswith("ok")
    assert any("does not fit 4 of 32 experts; the peers route their own inputs" in line for line in logged)


def test_ratios_are_our_time_over_the_peers():
    assert moe.ratio(50.0, 200.0) == "0.250"
    assert moe.ratio(None, 200.0) == "-" and moe.ratio(50.0, None) == "-"


def fake_timer(steps, copies, repeats):
    timings = {}
    for n, (name, step) in enumerate(steps.items()):
        step(0)
        timings[name] = Timing(200.0 + 100 * n, 190.0, 210.0 + 100 * n, launches=1, copies=copies)
    return timings


def tiny_context(tmp_path=None, doc=None, peers=None) -> Context:
    ctx = Context(KernelDir(None), device="cpu", copy_bandwidth=4e12, timer=fake_timer, log=lambda text: None)
    ctx.shapes.update(moe_dims=TINY, moe_tokens=(4, 8))
    if peers is not None:
        ctx.shapes["moe_peers"] = peers
    if doc is not None:
        path = tmp_path / "k2.json"
        path.write_text(json.dumps(doc))
        ctx.shapes["k2_json"] = str(path)
    return ctx


def test_the_table_times_the_unfused_path_beside_ours_and_says_why_triton_kernels_could_not_run(tmp_path, monkeypatch):
    logged = []
    ctx = tiny_context(tmp_path, k2_doc())
    ctx.log = logged.append

    def absent(*tensors):
        raise RuntimeError("triton_kernels not importable (ModuleNotFoundError: No module named 'triton_kernels')")

    monkeypatch.setitem(ctx.shapes, "moe_peers", {moe.TK: absent, moe.UNFUSED: DequantMoE})
    rows = moe.run(ctx)
    assert [r.shape.split()[0] for r in rows] == ["T=4", "T=8"]
    for row in rows:
        assert row.results[OURS].timing.median_us in (104.0, 108.0)
        unfused = row.results[moe.UNFUSED]
        assert unfused.timing is not None and unfused.check.startswith("ok"), unfused.check
        assert row.results[moe.TK].timing is None
        assert row.results[moe.TK].status.startswith("could not run: RuntimeError: triton_kernels not importable")
        assert row.nbytes == moe.k2_bytes(TINY, int(row.shape.split()[0][2:]), int(row.shape.split("=")[2]))
    table = logged[-1]
    assert "== K2 MoE" in table and "could not run: RuntimeError" in table
    assert "0.520" in table  # T = 4: ours 104 us over the unfused 200 us


def test_a_peer_that_fails_its_small_case_is_not_timed():
    def wrong(*tensors):
        inner = DequantMoE(*tensors)
        return lambda lat, ids, weights: inner(lat, ids, weights) * 1.5

    rows = moe.run(tiny_context(peers={"wrong": wrong, moe.UNFUSED: DequantMoE}))
    for row in rows:
        assert row.results["wrong"].timing is None
        assert row.results["wrong"].status.startswith("could not run: small case FAIL")
        assert row.results[moe.UNFUSED].timing is not None
        assert row.results[OURS].status == "no --k2-json"


def test_a_peer_with_another_route_fails_its_check():
    ctx = tiny_context(peers={moe.UNFUSED: DequantMoE})
    row = moe.run(ctx)[0]
    assert row.results[moe.UNFUSED].check.startswith("ok")
    gen = torch.Generator().manual_seed(0)
    dense = moe.Dense(TINY, "cpu", gen)
    inputs = moe.Inputs(TINY, 4, "cpu", gen)
    experts = moe.Experts(TINY, "cpu", gen)
    step = moe.Step(TINY, dense, inputs, DequantMoE(*experts.tensors()), "cpu")
    route = torch.zeros(4, TINY.top_k, dtype=torch.int64)
    assert step.check(experts, route) == "FAIL its route differs from the row's"


def test_the_unfused_peer_copies_nothing_from_the_host_when_called(monkeypatch):
    # A call is captured into a CUDA graph, whose capture refuses a host-to-device copy: the
    # dequantize tables come from the constructor, never from a call.
    gen = torch.Generator().manual_seed(3)
    experts = moe.Experts(TINY, "cpu", gen)
    peer = DequantMoE(*experts.tensors())
    lat = torch.randn(4, TINY.latent, generator=gen).to(torch.bfloat16)
    ids = torch.randint(0, TINY.experts, (4, TINY.top_k), generator=gen)
    weights = torch.rand(4, TINY.top_k, generator=gen)
    ref = moe_reference(lat, ids, weights, *experts.tensors())

    def refused(*args):
        raise AssertionError("a dequantize table made during a call")

    monkeypatch.setattr(moe_mxfp4, "byte_table", refused)
    monkeypatch.setattr(moe_mxfp4, "scale_table", refused)
    out = peer(lat, ids, weights).double()
    assert torch.allclose(out, ref, rtol=2e-2, atol=2e-2 * ref.abs().max().item())


def test_the_real_triton_kernels_peer_says_why_it_cannot_run_here():
    # On a machine without the package or without a GPU the peer raises with a reason; the table
    # turns it into "could not run: ...".
    if moe_mxfp4.triton_kernels_version() is None:
        with pytest.raises(RuntimeError, match="triton_kernels not importable"):
            moe_mxfp4.TritonKernelsMoE(*moe.Experts(moe.SMALL, "cpu", torch.Generator()).tensors())
    rows = moe.run(tiny_context(peers={moe.TK: moe_mxfp4.TritonKernelsMoE}))
    assert rows[0].results[moe.TK].status.startswith("could not run: ")
    assert moe.could_not_run("a\n  b") == "could not run: a b"


def test_the_ours_column_says_why_when_k2_bench_had_no_gpu(tmp_path):
    doc = {"gpu": False, "reason": "no GPU: no driver", "shapes": []}
    rows = moe.run(tiny_context(tmp_path, doc, peers={moe.UNFUSED: DequantMoE}))
    assert rows[0].results[OURS].status == "no GPU: no driver"
    text = moe.format_moe_table([moe.MoeLine(4, 12, 1_000_000, 1.0)], 4e12, moe.parse_k2_json(json.dumps(doc)))
    assert "k2_bench ran without a GPU (no GPU: no driver)" in text
