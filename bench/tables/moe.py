"""K2 (o_proj + MLP AttnRes + router + latent MXFP4 MoE + shared experts) on one K3 TP8 rank: ours
against the best Hopper MXFP4 MoE found and against the unfused path.

Ours is not launched here: kernels/k3/k2_bench times K2 (one persistent launch, rank 0, layer 13,
T = 4, 8, 16, a 256 MiB memset before each launch) and writes --json; `bench.run --k2-json FILE`
reads it (ctx.shapes["k2_json"]). The two peers run the same step at the same shapes, as separate
launches captured in one CUDA graph and timed like every other row (bench/timing.py):
  cuBLAS (torch.mm): o_proj, core W_o^T -> a [T, H] (the rank's partial; no all-reduce on one GPU);
  torch: the MLP AttnRes (k3_layer.md 3) with a as the delta, P' = bf16(P + a) written (to a second
    buffer, so the inputs and the route stay the same from launch to launch; the same bytes), the
    mix over the 2 blocks of layer 13 and the prefix, post_attention_layernorm -> y;
  cuBLAS: the router, y W_gate^T with f32 output; torch: sigmoid + correction bias, top-16,
    renormalized weights (bench/peers/moe_mxfp4.select_experts);
  cuBLAS: the latent, lat = y W_ld^T [T, 3584];
  the routed experts (w13 [896, 768, 3584] and w2 [896, 3584, 384] MXFP4, SiTU) on lat:
    "triton_kernels": OpenAI's triton_kernels matmul_ogs (MXFP4 weights, bf16 activations: w4a16 on
      Hopper), SiTU in torch between its two GEMMs (it fuses only its own activations);
    "unfused": each (token, expert) pair's weights dequantized to bf16 in torch, then torch.bmm;
  torch: routed_expert_norm (RMSNorm, eps 1e-5, one rounding) on the routed sum;
  cuBLAS + torch: the shared experts, gate_up [1536, 7168], SiTU, down [7168, 768] -> out [T, H];
  cuBLAS: rank 0's up-projection rows 0..895 on the normed latent, added into out's columns 0..895.
Both peers take the same route, checked equal: k2_bench's own (its --json "route", each token's
experts in its last launch), so that the peers run the same distinct experts as ours; the peers'
top-k still runs (the same launches) and only its choice is replaced. Without a route in the file,
the selection of the same torch ops on the table's own inputs.
Inputs are one copy (the experts alone are 2 GB): each launch streams the dense weights (126 MB)
and its experts' bytes, more than twice the H200's L2, so little of a launch's reads is left in L2
for the next one.
Checks, before timing: each peer's MoE on a small case (32 experts, top 4) against float64, and at
the real shape (copy 0, before and after timing) its routed sum against float32 on the experts it
chose, its route against the row's, out against float32 from its own bf16 intermediates. A peer
whose small case fails, or that cannot be built (triton_kernels absent from .peers/, or not working
with this Triton), is not timed; the table prints "could not run: <reason>".
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from bench.json_fields import json_field, json_object
from bench.measure import Context, compare, measure_row
from bench.peers.moe_mxfp4 import (DequantMoE, TritonKernelsMoE, moe_reference, select_experts, situ,
                                   triton_kernels_version)
from bench.report import OURS, Result, Row
from bench.timing import Timing

KERNELS: dict[str, str] = {}  # ours comes from k2_bench's --json, not from an exported kernel
TK = "triton_kernels"
UNFUSED = "unfused"
PEERS = (TK, UNFUSED)
TOKENS = (4, 8, 16)
BLOCK_BANK = 8  # B [T, 8, H]
MOE_TOLERANCE = 2e-2  # bf16 activations and outputs against float32/64 on the same bf16 inputs


@dataclass(frozen=True)
class Dims:
    """K2's shapes on one rank (k3_layer.md 1.2; K3 TP8 rank 0, layer 13)."""

    hidden: int = 7168  # H
    core: int = 1536  # o_proj's input: 12 KDA heads x 128
    nblocks: int = 2  # the MLP AttnRes's blocks at layer 13 (ceil(13 / 12)), before the prefix
    experts: int = 896
    top_k: int = 16
    latent: int = 3584
    expert_rows: int = 384  # Ir: this rank's slice of an expert's intermediate
    shared_rows: int = 768  # this rank's shared-expert intermediate
    up_rows: int = 896  # rank 0's routed_expert_up_proj rows
    eps: float = 1e-5


K3 = Dims()
# The small case every peer's MoE must pass before it is timed.
SMALL = replace(K3, experts=32, top_k=4, latent=512, expert_rows=128)


def k2_bytes(d: Dims, tokens: int, distinct: int) -> int:
    """The bytes K2 must move with `distinct` experts chosen: k2_bench's must_move at these shapes."""
    t, h, lat, ir, si = tokens, d.hidden, d.latent, d.expert_rows, d.shared_rows
    nbytes = h * d.core * 2 + d.experts * h * 2 + d.experts * 4
    nbytes += lat * h * 2 + 2 * si * h * 2 + h * si * 2
    nbytes += d.up_rows * lat * 2 + 3 * h * 2 + lat * 2
    nbytes += distinct * (2 * ir * lat // 2 + 2 * ir * lat // 32 + lat * ir // 2 + lat * ir // 32)
    nbytes += t * d.core * 2
    nbytes += t * h * 2 * 2 + t * d.nblocks * h * 2
    nbytes += t * h * 2
    return nbytes


# ---- k2_bench --json ----------------------------------------------------------------------------


@dataclass
class OursK2:
    """One shape of k2_bench's --json file (times in us)."""

    name: str
    tokens: int
    distinct: int
    nbytes: int
    median_us: float
    best_us: float
    floor_us: float
    route: list[list[int]] | None = None  # [T][top_k]: the experts each token chose in k2_bench's run


@dataclass
class OursK2Run:
    """k2_bench's --json file: its copy bandwidth and its shapes by T; or, without a GPU, why."""

    gpu: bool
    reason: str
    device: str
    copy_bandwidth: float
    shapes: dict[int, OursK2] = field(default_factory=dict)


class K2JsonError(ValueError):
    """The file is not k2_bench's --json output."""


def _field(doc: dict, key: str, kind: type, where: str):
    return json_field(doc, key, kind, where, K2JsonError)


def parse_k2_json(text: str, where: str = "k2 json") -> OursK2Run:
    """Parses k2_bench's --json output; K2JsonError names what is missing or malformed."""
    doc = json_object(text, where, K2JsonError)
    if not _field(doc, "gpu", bool, where):
        return OursK2Run(False, str(doc.get("reason", "no reason given")), "", 0.0)
    shapes = {}
    for i, entry in enumerate(_field(doc, "shapes", list, where)):
        at = f"{where}: shapes[{i}]"
        if not isinstance(entry, dict):
            raise K2JsonError(f"{at}: expected an object")
        shape = OursK2(_field(entry, "name", str, at), _field(entry, "T", int, at),
                       _field(entry, "distinct_experts", int, at), _field(entry, "bytes", int, at),
                       _field(entry, "median_us", float, at), _field(entry, "best_us", float, at),
                       _field(entry, "floor_us", float, at), _route(entry, at))
        shapes[shape.tokens] = shape
    return OursK2Run(True, "", str(doc.get("device", "")), _field(doc, "copy_bandwidth_bytes_per_s", float, where),
                     shapes)


def _route(entry: dict, at: str) -> list[list[int]] | None:
    """The shape's "route": T rows of expert ids, each row distinct ids >= 0; absent in older files."""
    if "route" not in entry:
        return None
    route = _field(entry, "route", list, at)
    tokens = entry["T"]
    rows_ok = len(route) == tokens and all(
        isinstance(row, list) and row and all(type(e) is int and e >= 0 for e in row) and len(set(row)) == len(row)
        and len(row) == len(route[0]) for row in route)
    if not rows_ok:
        raise K2JsonError(f'{at}: "route" must be {tokens} rows of the same number of distinct expert ids >= 0, '
                          f"got {str(route)[:80]}")
    return route


def load_k2_json(path: str | Path) -> OursK2Run:
    return parse_k2_json(Path(path).read_text(), str(path))


# ---- the table ----------------------------------------------------------------------------------


@dataclass
class MoeLine:
    """One T: the table's route, each peer's time or why it has none, and ours from the JSON."""

    tokens: int
    distinct: int  # the experts the peers' route chose (their bytes count these)
    nbytes: int
    floor_us: float
    peer_us: dict[str, float | None] = field(default_factory=dict)
    peer_status: dict[str, str] = field(default_factory=dict)
    check: str = ""
    ours: OursK2 | None = None


def could_not_run(reason: str) -> str:
    return "could not run: " + " ".join(reason.split())[:200]


def ratio(ours_us: float | None, peer_us: float | None) -> str:
    """Our time over the peer's: below 1, ours is faster; "-" when either is missing."""
    return f"{ours_us / peer_us:.3f}" if ours_us and peer_us else "-"


def format_moe_table(lines: list[MoeLine], copy_bandwidth: float, ours: OursK2Run | None) -> str:
    if ours is None:
        source = "ours: not measured (no --k2-json)"
    elif not ours.gpu:
        source = f"ours: k2_bench ran without a GPU ({ours.reason})"
    else:
        same = all(s.route is not None for s in ours.shapes.values())
        source = (f"ours: k2_bench on {ours.device or 'the GPU'}, its copy {ours.copy_bandwidth / 1e12:.3f} TB/s, "
                  "cold L2 per launch, its own random route"
                  + (", which the peers run too" if same else "; the peers route the table's own inputs"))
    header = ["T", "experts", "ours experts", "MB", "floor us", "ours us", "ours/floor", f"{TK} us",
              f"ours/{TK}", f"{UNFUSED} us", f"ours/{UNFUSED}", "check"]
    body = []
    for line in lines:
        mine = line.ours
        ours_us = mine.median_us if mine else None
        cells = [str(line.tokens), str(line.distinct), str(mine.distinct) if mine else "-",
                 f"{line.nbytes / 1e6:.2f}", f"{line.floor_us:.2f}", f"{ours_us:.2f}" if ours_us else "-",
                 f"{ours_us / mine.floor_us:.3f}" if mine and mine.floor_us else "-"]
        for peer in PEERS:
            us = line.peer_us.get(peer)
            # A long reason is cut here; the log and results.json keep it whole.
            status = line.peer_status.get(peer, "-")
            cells += [f"{us:.2f}" if us else status[:60] + ("..." if len(status) > 60 else ""), ratio(ours_us, us)]
        body.append(cells + [line.check])
    widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]
    out = [f"== K2 MoE (o_proj + MLP AttnRes + router + latent MXFP4 MoE + shared experts), K3 TP8 rank 0, "
           f"layer 13 (copy {copy_bandwidth / 1e12:.3f} TB/s; ours/peer = our time / the peer's: below 1 ours "
           "is faster)", f"   {source}",
           f"   {TK}: matmul_ogs w4a16 ({triton_kernels_version() or 'not found'}), SiTU in torch; "
           f"{UNFUSED}: bf16 dequantize + torch.bmm; both: cuBLAS for the dense GEMMs, one CUDA graph"]
    for row in [header] + body:
        out.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return "\n".join(out)


# ---- the unfused step ---------------------------------------------------------------------------


def _rand_u8(shape, low: int, high: int, device, gen) -> torch.Tensor:
    return torch.randint(low, high, shape, dtype=torch.uint8, device=device, generator=gen)


class Experts:
    """The routed experts in the checkpoint's MXFP4 layout: random nibbles, scale codes 120..127."""

    def __init__(self, d: Dims, device: str, gen: torch.Generator):
        e, ir, lat = d.experts, d.expert_rows, d.latent
        self.w13 = _rand_u8((e, 2 * ir, lat // 2), 0, 256, device, gen)
        self.s13 = _rand_u8((e, 2 * ir, lat // 32), 120, 128, device, gen)
        self.w2 = _rand_u8((e, lat, ir // 2), 0, 256, device, gen)
        self.s2 = _rand_u8((e, lat, ir // 32), 120, 128, device, gen)

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return self.w13, self.s13, self.w2, self.s2


class Dense:
    """K2's bf16 weights and norms besides the experts (one rank's)."""

    def __init__(self, d: Dims, device: str, gen: torch.Generator):
        h, lat = d.hidden, d.latent

        def randn(*shape: int, std: float = 1.0, dtype=torch.bfloat16) -> torch.Tensor:
            return (torch.randn(*shape, device=device, generator=gen) * std).to(dtype)

        self.w_o = randn(h, d.core, std=d.core ** -0.5)
        self.res_norm = (1.0 + randn(h, std=0.1, dtype=torch.float32)).to(torch.bfloat16)
        self.res_proj = randn(h, std=0.02)
        self.post_norm = (1.0 + randn(h, std=0.1, dtype=torch.float32)).to(torch.bfloat16)
        self.w_gate = randn(d.experts, h, std=h ** -0.5)
        self.gate_bias = randn(d.experts, std=0.1, dtype=torch.float32)
        self.w_ld = randn(lat, h, std=h ** -0.5)
        self.latent_norm = (1.0 + randn(lat, std=0.1, dtype=torch.float32)).to(torch.bfloat16)
        self.w_up = randn(d.up_rows, lat, std=lat ** -0.5)
        self.w_gu = randn(2 * d.shared_rows, h, std=h ** -0.5)
        self.w_sd = randn(h, d.shared_rows, std=d.shared_rows ** -0.5)


class Inputs:
    """One T's activations: core, the prefix, the block bank."""

    def __init__(self, d: Dims, tokens: int, device: str, gen: torch.Generator):
        self.core = torch.randn(tokens, d.core, device=device, generator=gen).to(torch.bfloat16)
        self.prefix = torch.randn(tokens, d.hidden, device=device, generator=gen).to(torch.bfloat16)
        self.blocks = torch.randn(tokens, BLOCK_BANK, d.hidden, device=device, generator=gen).to(torch.bfloat16)


_OUT_DTYPE: dict[str, bool] = {}


def mm_f32(a: torch.Tensor, b_t: torch.Tensor) -> torch.Tensor:
    """a b_t with f32 output from bf16 operands (the router's GateLinear): torch.mm's out_dtype where
    this torch has it on this device, else the bf16 product widened (said in the check)."""
    key = a.device.type
    if key not in _OUT_DTYPE:
        try:
            torch.mm(a[:1], b_t[:, :1], out_dtype=torch.float32)
            _OUT_DTYPE[key] = True
        except (TypeError, RuntimeError):
            _OUT_DTYPE[key] = False
    if _OUT_DTYPE[key]:
        return torch.mm(a, b_t, out_dtype=torch.float32)
    return torch.mm(a, b_t).float()


class Step:
    """K2 as separate launches, the routed experts by `moe` (lat, ids, weights) -> routed [T, L]."""

    def __init__(self, d: Dims, dense: Dense, inputs: Inputs, moe, device: str, route: torch.Tensor | None = None):
        self.d, self.w, self.x, self.moe, self.route = d, dense, inputs, moe, route
        t, h = inputs.core.shape[0], d.hidden
        self.prefix_out = torch.empty(t, h, dtype=torch.bfloat16, device=device)
        self.out = torch.empty(t, h, dtype=torch.bfloat16, device=device)

    def attn_res(self, a: torch.Tensor) -> torch.Tensor:
        """k3_layer.md 3 with a as the delta: one bf16 rounding of P + a, the softmax mix of the blocks
        and the prefix, the output RMSNorm, one rounding."""
        w, d = self.w, self.d
        prefix = torch.add(self.x.prefix, a, out=self.prefix_out)
        sources = torch.cat((self.x.blocks[:, :d.nblocks], prefix.unsqueeze(1)), 1).float()
        c = w.res_norm.float() * w.res_proj.float()
        logits = (sources * c).sum(-1) * torch.rsqrt(sources.pow(2).mean(-1) + d.eps)
        mixed = (torch.softmax(logits, dim=1).unsqueeze(-1) * sources).sum(1)
        return (mixed * torch.rsqrt(mixed.pow(2).mean(-1, keepdim=True) + d.eps) * w.post_norm.float()).to(
            torch.bfloat16)

    def __call__(self, i: int = 0) -> None:
        w, d = self.w, self.d
        a = torch.mm(self.x.core, w.w_o.t())
        y = self.attn_res(a)
        self.ids, self.weights = select_experts(mm_f32(y, w.w_gate.t()), w.gate_bias, d.top_k, self.route)
        self.lat = torch.mm(y, w.w_ld.t())
        self.routed = self.moe(self.lat, self.ids, self.weights)
        r = self.routed.float()
        self.normed = (r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + d.eps) * w.latent_norm.float()).to(
            torch.bfloat16)
        gu = torch.mm(y, w.w_gu.t())
        self.act = situ(gu[:, :d.shared_rows].float(), gu[:, d.shared_rows:].float()).to(torch.bfloat16)
        torch.mm(self.act, w.w_sd.t(), out=self.out)
        self.out[:, :d.up_rows] += torch.mm(self.normed, w.w_up.t())

    def check(self, experts: Experts, route: torch.Tensor) -> str:
        """Runs the step once: its route against the row's, the routed sum against float32 on the
        experts it chose, out against float32 from its own bf16 intermediates; all finite."""
        self.out.fill_(float("nan"))
        self()
        if self.out.is_cuda:
            torch.cuda.synchronize()
        if not torch.equal(torch.sort(self.ids, 1).values, route):
            return "FAIL its route differs from the row's"
        routed = compare(self.routed, moe_reference(self.lat, self.ids, self.weights, *experts.tensors(),
                                                    dtype=torch.float32), MOE_TOLERANCE)
        w, d = self.w, self.d
        out = self.act.float() @ w.w_sd.float().t()
        out[:, :d.up_rows] += (self.normed.float() @ w.w_up.float().t()).to(torch.bfloat16).float()
        whole = compare(self.out, out, MOE_TOLERANCE)
        failed = [f"{name} {text}" for name, text in (("moe", routed), ("out", whole)) if not text.startswith("ok")]
        if failed:
            return "FAIL " + "; ".join(failed)
        note = "" if _OUT_DTYPE.get(self.out.device.type, True) else ", router bf16 widened"
        return f"ok moe {routed[3:]}, out {whole[3:]}{note}"


def small_case(make, device: str, seed: int = 5) -> str:
    """A peer's MoE (make(w13, s13, w2, s2)) on SMALL against float64: "ok <err>" or "FAIL ..."."""
    d = SMALL
    gen = torch.Generator(device=device).manual_seed(seed)
    experts = Experts(d, device, gen)
    tokens = 4
    lat = torch.randn(tokens, d.latent, device=device, generator=gen).to(torch.bfloat16)
    logits = torch.randn(tokens, d.experts, device=device, generator=gen)
    ids, weights = select_experts(logits, torch.zeros(d.experts, device=device), d.top_k)
    got = make(*experts.tensors())(lat, ids, weights)
    if got.is_cuda:
        torch.cuda.synchronize()
    return compare(got, moe_reference(lat, ids, weights, *experts.tensors()), MOE_TOLERANCE)


def _peer_makers() -> dict:
    return {TK: TritonKernelsMoE, UNFUSED: DequantMoE}


def _ours(ctx: Context) -> OursK2Run | None:
    path = ctx.shapes.get("k2_json")
    if not path:
        return None
    try:
        return load_k2_json(path)
    except (OSError, ValueError) as err:
        ctx.log(f"  moe: --k2-json {path}: {err}")
        return OursK2Run(False, f"unreadable --k2-json: {err}", "", 0.0)


def _build_peers(ctx: Context, experts: Experts) -> tuple[dict, dict[str, str]]:
    """Each peer's MoE on the real experts, gated by its small case; else why it cannot run."""
    built, why = {}, {}
    for name, make in ctx.shapes.get("moe_peers", _peer_makers()).items():
        try:
            small = small_case(make, ctx.device)
            if not small.startswith("ok"):
                why[name] = could_not_run(f"small case {small}")
                continue
            built[name] = (make(*experts.tensors()), small)
        except Exception as err:  # noqa: BLE001 (a peer that breaks costs only its own column)
            why[name] = could_not_run(f"{type(err).__name__}: {err}")
        ctx.log(f"  moe {name}: {'small case ' + built[name][1] if name in built else why[name]}")
    return built, why


def _given_route(ctx: Context, d: Dims, tokens: int, mine: OursK2 | None) -> torch.Tensor | None:
    """k2_bench's route for this T as a [T, top_k] int64 tensor, or None (no route in its file, or
    one that does not fit these dims: logged)."""
    if mine is None or mine.route is None:
        return None
    route = torch.tensor(mine.route, dtype=torch.int64)
    if route.shape != (tokens, d.top_k) or int(route.max()) >= d.experts:
        ctx.log(f"  moe T={tokens}: k2_bench's route {tuple(route.shape)} with ids up to {int(route.max())} does "
                f"not fit {d.top_k} of {d.experts} experts; the peers route their own inputs")
        return None
    return route.to(ctx.device)


def run(ctx: Context) -> list[Row]:
    d: Dims = ctx.shapes.get("moe_dims", K3)
    ours = _ours(ctx)
    gen = torch.Generator(device=ctx.device).manual_seed(13)
    experts = Experts(d, ctx.device, gen)
    dense = Dense(d, ctx.device, gen)
    peers, why = _build_peers(ctx, experts)
    rows: list[Row] = []
    lines: list[MoeLine] = []
    for tokens in ctx.shapes.get("moe_tokens", TOKENS):
        inputs = Inputs(d, tokens, ctx.device, gen)
        mine = ours.shapes.get(tokens) if ours is not None and ours.gpu else None
        given = _given_route(ctx, d, tokens, mine)
        steps = {name: Step(d, dense, inputs, moe, ctx.device, given) for name, (moe, _) in peers.items()}
        # The row's route: k2_bench's when its file has one, else the selection of the same torch
        # ops on the same inputs, once.
        probe = Step(d, dense, inputs, lambda lat, ids, weights: torch.zeros_like(lat), ctx.device, given)
        probe()
        route = torch.sort(probe.ids, 1).values
        distinct = int(torch.unique(route).numel())
        if mine is not None and given is not None and distinct != mine.distinct:
            ctx.log(f"  moe T={tokens}: k2_bench's route has {distinct} distinct experts, its file says {mine.distinct}")
        nbytes = k2_bytes(d, tokens, distinct)
        line = MoeLine(tokens, distinct, nbytes, nbytes / ctx.copy_bandwidth * 1e6 if ctx.copy_bandwidth else 0.0,
                       ours=mine)

        def check(name: str, after: bool, steps=steps, route=route) -> str:
            return steps[name].check(experts, route)

        shape = f"T={tokens} experts={distinct}"
        row = measure_row(ctx, "moe", shape, nbytes, 1, steps, check, absent=why)
        for name in PEERS:
            result = row.results.get(name)
            line.peer_us[name] = row.time_us(name)
            line.peer_status[name] = (result.status if result is not None else "not run")
        line.check = "; ".join(f"{n} {r.check}" for n, r in row.results.items() if r.check)
        if mine is not None:
            row.results[OURS] = Result(OURS, timing=Timing(mine.median_us, mine.best_us, mine.median_us, launches=1,
                                                           copies=1),
                                       check=f"k2_bench ({mine.distinct} experts, {mine.nbytes / 1e6:.2f} MB)")
        else:
            reason = "no --k2-json" if ours is None else ours.reason if not ours.gpu else "not in --k2-json"
            row.results[OURS] = Result(OURS, status=reason)
        rows.append(row)
        lines.append(line)
        del steps, probe
        if ctx.device.startswith("cuda"):
            torch.cuda.empty_cache()
    ctx.log(format_moe_table(lines, ctx.copy_bandwidth, ours))
    return rows
