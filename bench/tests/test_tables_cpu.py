"""Every table end to end on the CPU at tiny shapes: a stand-in timer (each copy launched once),
Triton under its interpreter, fla under it too, and a stand-in "ours" written in torch that reads
exactly the parameter names docs/bench.md promises. Checks the wiring, the checks and the report."""

import csv
import json
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from bench.kda_check import reference_for  # noqa: E402
from bench.kda_inputs import KdaInputs  # noqa: E402
from bench.measure import Context  # noqa: E402
from bench.report import OURS, format_table, write_results  # noqa: E402
from bench.tables import copy, gemm, gemv, kda, rows  # noqa: E402
from bench.timing import Timing  # noqa: E402
from conftest import INTERPRETER_SKIP, interpreter_works  # noqa: E402

pytestmark = pytest.mark.skipif(not interpreter_works(), reason=INTERPRETER_SKIP)


def _kda(v):
    inputs = KdaInputs(
        q=v["q"], k=v["k"], v=v["v"], g=v["g"], beta=v["beta"], a_log=v["a_log"], dt_bias=v["dt_bias"],
        state=v["state"], state_indices=v["state_indices"], num_accepted=v["num_accepted"],
        query_start=v["query_start"], valid=v["N"],
    )
    assert v["state"].stride(0) == v["slot_stride"] and v["q"].shape[:2] == (v["T"], v["heads"])
    o, s = reference_for(inputs)
    v["o"].copy_(torch.from_numpy(o).to(torch.bfloat16))
    v["state"].copy_(torch.from_numpy(s).float())


FAKE_KERNELS = {
    "copy": lambda v: v["dst"][: v["n"]].copy_(v["src"][: v["n_bytes"] // v["src"].element_size()]),
    "gemv": lambda v: v["y"].copy_(v["x"].float() @ v["w"].float().t()[: v["K"], : v["N"]])
    if v["M"] == v["x"].shape[0] else None,
    "rmsnorm": lambda v: v["y"].copy_(
        v["x"].float() * torch.rsqrt(v["x"].float().pow(2).mean(-1, keepdim=True) + v["eps"]) * v["w"].float()
    ),
    "softmax": lambda v: v["y"].copy_(torch.softmax(v["x"].float(), -1)[: v["rows"], : v["cols"]]),
    "gemm": lambda v: v["c"].copy_(v["a"].float() @ v["b"].float().t()[: v["K"], : v["N"]]),
    "kda": _kda,
}


class FakeOp:
    def __init__(self, name):
        self.name = name
        self.run = FAKE_KERNELS[name.split("_")[0]]

    def params(self):
        return []

    def __call__(self, values):
        self.run(values)


class FakeKernels:
    path = "fake"

    def __init__(self, exported):
        self.exported = exported

    def has(self, name):
        return any(name.startswith(prefix) for prefix in self.exported)

    def load(self, name, device):
        return FakeOp(name)


def fake_timer(steps, copies, repeats):
    timings = {}
    for n, (name, step) in enumerate(steps.items()):
        for i in range(copies):
            step(i)
        timings[name] = Timing(10.0 + n, 9.0 + n, 11.0 + n, launches=copies, copies=copies)
    return timings


def _context(exported):
    shapes = {
        "copy": [1 << 12], "gemv": [(2, 64, 48)], "rmsnorm": [2], "rmsnorm_hidden": 64, "softmax": (4, 32),
        "gemm": (32, 48, 64), "kda": [(2, 2)], "kda_head_dim": 32,
    }
    return Context(FakeKernels(exported), device="cpu", copy_bandwidth=4e12, repeats=1, quick=True,
                   shapes=shapes, timer=fake_timer, log=lambda text: None, l2=1024)


@pytest.mark.parametrize("table", [copy, gemv, rows, gemm, kda])
def test_table_runs_ours_and_peers_and_checks_ours(table):
    for row in table.run(_context(exported=("copy", "gemv", "rmsnorm", "softmax", "gemm", "kda"))):
        ours = row.results[OURS]
        assert ours.status == "ok" and ours.timing is not None, (row.shape, ours)
        assert ours.check.startswith("ok"), (row.shape, ours.check)
        peers = [name for name in row.results if name != OURS]
        assert peers and all(row.results[p].timing is not None for p in peers), row.results
        assert row.ratio(peers[0]) == pytest.approx(row.time_us(peers[0]) / 10.0)


def test_table_without_our_export_says_so_and_invents_no_number():
    row = copy.run(_context(exported=()))[0]
    assert row.results[OURS].status == "not exported" and row.results[OURS].timing is None
    assert row.ratio("memcpy") is None
    text = format_table("copy", [row], 4e12)
    assert "not exported" in text


def test_kda_check_passes_fla_and_ours_on_padded_requests():
    row = kda.run(_context(exported=("kda",)))[0]
    assert row.results[OURS].check.startswith("ok"), row.results[OURS].check
    assert row.results["fla"].check.startswith("ok"), row.results["fla"].check


def test_a_wrong_kernel_of_ours_is_flagged():
    FAKE_KERNELS["broken"] = lambda v: v["y"].zero_()
    try:
        ctx = _context(exported=("rmsnorm",))
        ctx.kernels.load = lambda name, device: FakeOp("broken_" + name)
        row = rows.run(ctx)[0]
        assert row.results[OURS].check.startswith("FAIL"), row.results[OURS].check
    finally:
        del FAKE_KERNELS["broken"]


def test_a_peer_that_cannot_be_tuned_is_recorded_and_the_row_goes_on(monkeypatch):
    def no_config(*args, **kwargs):
        raise RuntimeError("no config fits")

    monkeypatch.setattr(gemv, "tuned_linear", no_config)
    row = gemv.run(_context(exported=("gemv",)))[0]
    assert row.results["triton"].status == "error: RuntimeError: tuning the triton peer failed: no config fits"
    assert row.results["triton"].timing is None
    assert row.results[OURS].timing is not None and row.results["cublas"].timing is not None


def test_results_files_hold_every_row(tmp_path):
    ctx = _context(exported=("copy",))
    table_rows = copy.run(ctx)
    write_results(tmp_path, {"command": "test"}, table_rows, 4e12)
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["command"] == "test" and doc["rows"][0]["results"]["ours"]["timing"]["median_us"] == 10.0
    lines = list(csv.DictReader(open(tmp_path / "results.csv")))
    assert {line["impl"] for line in lines} == {"ours", "memcpy"}
    memcpy = next(line for line in lines if line["impl"] == "memcpy")
    assert float(memcpy["ratio_peer_over_ours"]) == pytest.approx(1.1)
    assert float(memcpy["floor_us"]) == pytest.approx(2 * 4096 / 4e12 * 1e6, rel=1e-5)


class VariantKernels(FakeKernels):
    """Exports copy_bytes4096 and two variants of it, one of which fails to load."""

    def names(self):
        return ["copy_bytes4096", "copy_bytes4096__wide", "copy_bytes4096__broken", "rmsnorm_rows2_h64"]

    def has(self, name):
        return name in self.names()

    def load(self, name, device):
        if name.endswith("__broken"):
            raise RuntimeError("CUDA_ERROR_INVALID_IMAGE")
        return FakeOp(name)


def test_our_variants_are_measured_and_checked_beside_ours():
    ctx = _context(exported=())
    ctx.kernels = VariantKernels(())
    row = copy.run(ctx)[0]
    assert list(row.results)[:2] == [OURS, "ours:wide"]
    assert row.results["ours:wide"].timing is not None and row.results["ours:wide"].check == "ok"
    assert row.results["ours:broken"].status == "error: CUDA_ERROR_INVALID_IMAGE"
    assert row.results["ours:broken"].timing is None
    assert "ours:broken" in format_table("copy", [row], 4e12)
    assert ctx.variants("rmsnorm_rows2_h64") == {}


def test_gemm_variants_are_measured_and_checked_beside_ours():
    class GemmVariants(FakeKernels):
        def names(self):
            return ["gemm_m32_n48_k64", "gemm_m32_n48_k64__stages3"]

        def has(self, name):
            return name in self.names()

    ctx = _context(exported=())
    ctx.kernels = GemmVariants(())
    row = gemm.run(ctx)[0]
    assert list(row.results)[:2] == [OURS, "ours:stages3"]
    assert row.results["ours:stages3"].timing is not None and row.results["ours:stages3"].check.startswith("ok")


def test_copy_beyond_the_chunk_size_also_times_the_one_node_memcpy(monkeypatch):
    from bench import timing

    monkeypatch.setattr(timing, "COPY_CHUNK_BYTES", 1024)
    row = copy.run(_context(exported=("copy",)))[0]
    assert row.results["memcpy"].check == "ok" and row.results[copy.ONE_NODE].check == "ok"
    assert row.results[copy.ONE_NODE].timing is not None


def test_a_small_copy_has_no_one_node_row():
    row = copy.run(_context(exported=("copy",)))[0]
    assert copy.ONE_NODE not in row.results


def test_chunked_copy_copies_every_byte_and_refuses_a_size_mismatch():
    from bench.timing import chunked_copy

    src = torch.randint(0, 256, (10000,), dtype=torch.uint8)
    dst = torch.full_like(src, 0xA5)
    chunked_copy(src, dst, 4096)  # 4096 + 4096 + 1808
    assert torch.equal(src, dst)
    wide = torch.randn(3, 700)  # any dtype and shape: bytes are what is copied
    out = torch.empty_like(wide)
    chunked_copy(wide, out, 1000)
    assert torch.equal(wide, out)
    with pytest.raises(ValueError, match="src has 10000 bytes, dst 9999"):
        chunked_copy(src, dst[:9999], 4096)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
