"""The KDA half of one K3 layer on one TP8 rank (K1 + o_proj), unfused, against ours.

The unfused path is the half's pieces as separate launches, captured in one CUDA graph and timed
as every other row (bench/timing.py), at the real shapes (K3 TP8 rank 0, KDA layer 1: one block
source and the prefix, a pending delta; N = 1, 2, 4 requests at q = 4 and q = 2):
  torch: the delta folded into the prefix (in place), AttnRes (k3_layer.md 3: each source's
    RMS with the AttnRes norm and proj weights, softmax over the sources, the mix), the input
    RMSNorm;
  cuBLAS (torch.mm): the merged in_proj, f_b on f_a;
  torch: the short causal conv with the accepted-token offset and the conv state update (4.2),
    q / k / v laid out contiguous for the recurrence, beta's columns;
  fla: fused_recurrent_kda_fwd as bench/peers/fla_kda.py calls it (gates, beta's sigmoid and
    the q / k l2norm inside it, as the stock path runs them), the state read at the accepted
    column and stored per position;
  torch: the gated RMSNorm (4.5) -> core;
  cuBLAS: o_proj, core W_o^T -> the rank's partial [T, H] (no all-reduce on one GPU).
Inputs rotate over enough copies (weights, caches and activations: a whole layer each) that the
L2 never holds the next one. Ours is not launched here: kernels/k3/k1_bench times K1 + our o_proj
GEMV and writes --json; `bench.run --k1-json FILE` reads it (ctx.shapes["k1_json"]) and the table
prints both side by side (bench/kda_half_report.py), with the stock anchors of anchors.md.
Check (copy 0, before and after timing): AttnRes and the conv (its output and the conv state it
stored) against float64 on the same inputs, the recurrence's output and stored states against
the float64 reference on the inputs the chain handed it (bench/kda_check.py, fla's rules), and
o_proj against f32 on core.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from bench.kda_check import check_kda, reference_for
from bench.kda_half_report import (BLOCK_BANK, EPS, F_A, HEAD_DIM, HEADS, HIDDEN, IN_PROJ_ROWS, NBLOCKS,
                                   PROJECTION, SHAPES, HalfLine, OursRun, format_half_table,
                                   half_bytes, load_k1_json, state_len)
from bench.kda_inputs import KdaInputs, as_numpy
from bench.measure import Context, compare, measure_row
from bench.peers.fla_kda import fla_kda_verify, fla_version
from bench.report import OURS, Result, Row
from bench.timing import Timing, copies_for

KERNELS: dict[str, str] = {}  # ours comes from k1_bench's --json, not from an exported kernel
UNFUSED = "unfused"
STOCK = "stock"

# The merged in_proj's row blocks (k3_layer.md 1.2).
_G2 = 3 * PROJECTION
_F_A = 4 * PROJECTION
_BETA = _F_A + F_A


class Layer:
    """One copy of everything one step of the half reads and writes: weights, caches, activations."""

    def __init__(self, requests: int, q: int, device: str, gen: torch.Generator):
        t, h, pl = requests * q, HIDDEN, PROJECTION

        def randn(*shape: int, std: float = 1.0, dtype=torch.bfloat16) -> torch.Tensor:
            return (torch.randn(*shape, generator=gen) * std).to(dtype).to(device)

        self.prefix = randn(t, h)
        self.delta = randn(t, h, std=0.1)
        self.blocks = randn(t, BLOCK_BANK, h)
        self.ares_norm = (1.0 + randn(h, std=0.1, dtype=torch.float32)).to(torch.bfloat16)
        self.ares_proj = randn(h, std=0.02)
        self.in_norm = (1.0 + randn(h, std=0.1, dtype=torch.float32)).to(torch.bfloat16)
        w_in = torch.randn(IN_PROJ_ROWS, h, generator=gen) * h ** -0.5
        w_in[_BETA + HEADS:] = 0.0  # pad rows are zero
        self.w_in = w_in.to(torch.bfloat16).to(device)
        self.w_fb = randn(pl, F_A, std=F_A ** -0.5)
        self.conv_w = randn(3 * pl, 4, std=0.5, dtype=torch.float32)
        self.a_log = randn(HEADS, std=0.5, dtype=torch.float32)
        self.dt_bias = randn(pl, std=0.5, dtype=torch.float32)
        self.o_norm = (1.0 + randn(HEAD_DIM, std=0.1, dtype=torch.float32)).to(torch.bfloat16)
        self.w_o = randn(h, pl, std=pl ** -0.5)
        slots = 1 + requests * q
        # Channels-last conv state [slots, state_len, 3 Pl] (the default layout) and the V-first
        # recurrent state [slots, NHl, 128, 128].
        self.conv_state = randn(slots, state_len(q), 3 * pl)
        self.state = randn(slots, HEADS, HEAD_DIM, HEAD_DIM, std=0.1, dtype=torch.float32)
        self.out = torch.empty(t, h, dtype=torch.bfloat16, device=device)

    def nbytes(self) -> int:
        return sum(v.numel() * v.element_size() for v in vars(self).values() if isinstance(v, torch.Tensor))


class Unfused:
    """The half's pieces as separate launches; scratch shared by the layer copies (the steps run in
    turn); step metadata (state indices, accepted counts, query starts) shared too."""

    def __init__(self, requests: int, q: int, device: str, l2: int, seed: int = 11):
        gen = torch.Generator().manual_seed(seed)
        self.requests, self.q, self.t = requests, q, requests * q
        self.layers = [Layer(requests, q, device, gen)]
        self.copies = copies_for(self.layers[0].nbytes(), l2)
        self.layers += [Layer(requests, q, device, gen) for _ in range(self.copies - 1)]
        t, pl = self.t, PROJECTION
        # Request r's slots 1 + r q .. (column 0 also the conv slot); every token accepted last step.
        self.state_indices = (1 + torch.arange(requests * q, dtype=torch.int32)).view(requests, q).to(device)
        self.num_accepted = torch.full((requests,), q, dtype=torch.int32, device=device)
        self.query_start = torch.arange(0, t + 1, q, dtype=torch.int32, device=device)
        self.window = torch.arange(3, device=device)
        self.new_entries = torch.arange(q + 2, device=device)
        self.proj = torch.empty(t, IN_PROJ_ROWS, dtype=torch.bfloat16, device=device)
        self.g_raw = torch.empty(t, pl, dtype=torch.bfloat16, device=device)
        self.qkv = torch.empty(3, t, pl, dtype=torch.bfloat16, device=device)
        self.beta = torch.empty(t, HEADS, dtype=torch.bfloat16, device=device)
        self.o = torch.empty(t, HEADS, HEAD_DIM, dtype=torch.bfloat16, device=device)
        self.core = torch.empty(t, pl, dtype=torch.bfloat16, device=device)

    def kda_inputs(self, layer: Layer, state: torch.Tensor | None = None) -> KdaInputs:
        """The recurrence's inputs as the chain hands them to fla (views of the scratch)."""
        shape = (self.t, HEADS, HEAD_DIM)
        return KdaInputs(
            q=self.qkv[0].view(shape), k=self.qkv[1].view(shape), v=self.qkv[2].view(shape),
            g=self.g_raw.view(shape), beta=self.beta, a_log=layer.a_log, dt_bias=layer.dt_bias,
            state=layer.state if state is None else state, state_indices=self.state_indices,
            num_accepted=self.num_accepted, query_start=self.query_start, valid=self.requests,
        )

    def attn_res(self, layer: Layer) -> torch.Tensor:
        """k3_layer.md 3: the delta folded in (stored), the mix of the block sources and the prefix,
        the input RMSNorm, one bf16 rounding."""
        prefix = layer.prefix.add_(layer.delta)  # bf16r(p + d), in place
        sources = torch.cat((layer.blocks[:, :NBLOCKS], prefix.unsqueeze(1)), 1).float()  # [T, nb + 1, H]
        c = layer.ares_norm.float() * layer.ares_proj.float()
        logits = (sources * c).sum(-1) * torch.rsqrt(sources.pow(2).mean(-1) + EPS)
        weights = torch.softmax(logits, dim=1)
        mixed = (weights.unsqueeze(-1) * sources).sum(1)
        return (mixed * torch.rsqrt(mixed.pow(2).mean(-1, keepdim=True) + EPS) * layer.in_norm.float()).to(torch.bfloat16)

    def conv(self, layer: Layer) -> None:
        """k3_layer.md 4.2: per request the window at num_accepted - 1 of the slot in column 0, the
        4-tap conv with SiLU on q | k | v, the state's first q + 2 entries rewritten."""
        n, q, pl = self.requests, self.q, PROJECTION
        slot = self.state_indices[:, 0].long().unsqueeze(1)  # [N, 1]
        first = (self.num_accepted.long() - 1).unsqueeze(1) + self.window  # [N, 3]
        window = layer.conv_state[slot, first]  # [N, 3, 3 Pl]
        seq = torch.cat((window, self.proj[:, :3 * pl].view(n, q, 3 * pl)), 1)  # [N, q + 3, 3 Pl]
        x = seq.float()
        w = layer.conv_w
        acc = x[:, 0:q] * w[:, 0] + x[:, 1:q + 1] * w[:, 1] + x[:, 2:q + 2] * w[:, 2] + x[:, 3:q + 3] * w[:, 3]
        out = F.silu(acc).to(torch.bfloat16)  # [N, q, 3 Pl]
        layer.conv_state[slot, self.new_entries] = seq[:, 1:]
        self.qkv.copy_(out.view(self.t, 3, pl).transpose(0, 1))

    def gated_norm(self, layer: Layer) -> None:
        """k3_layer.md 4.5 on the recurrence's bf16 output, gate g2 from in_proj; one rounding."""
        o = self.o.float()
        g2 = self.proj[:, _G2:_G2 + PROJECTION].view(self.t, HEADS, HEAD_DIM).float()
        y = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + EPS) * layer.o_norm.float() * torch.sigmoid(g2)
        self.core.view(self.t, HEADS, HEAD_DIM).copy_(y)

    def step(self, i: int) -> None:
        layer = self.layers[i]
        x = self.attn_res(layer)
        self.x = x  # kept for the check
        torch.mm(x, layer.w_in.t(), out=self.proj)
        torch.mm(self.proj[:, _F_A:_F_A + F_A], layer.w_fb.t(), out=self.g_raw)
        self.conv(layer)
        self.beta.copy_(self.proj[:, _BETA:_BETA + HEADS])
        fla_kda_verify(self.kda_inputs(layer), layer.state, self.o)
        self.gated_norm(layer)
        torch.mm(self.core, layer.w_o.t(), out=layer.out)

    def check(self) -> str:
        """Runs copy 0 once and checks it; a check that raises is reported as a failure, so the
        timing still runs."""
        try:
            return self._check()
        except Exception as err:  # noqa: BLE001 (a broken check must not cost the row its time)
            return f"FAIL the check raised {type(err).__name__}: {err}"[:300]

    # What the check reads, and how it poisons the outputs first (the stock peer answers otherwise).
    def poison(self, layer: Layer) -> None:
        layer.out.fill_(float("nan"))
        self.o.fill_(float("nan"))

    def conv_out(self) -> torch.Tensor:
        """The conv's SiLU output as [3, T, Pl] (q | k | v)."""
        return self.qkv

    def rec_out(self) -> torch.Tensor:
        """The recurrence's output [T, NHl, 128], before the gated norm."""
        return self.o

    def core_out(self) -> torch.Tensor:
        return self.core

    def layer_out(self, layer: Layer) -> torch.Tensor:
        return layer.out

    def _check(self) -> str:
        """AttnRes and the conv (its output and the state it wrote) against float64 on the same
        inputs, the recurrence against the float64 reference (bench/kda_check.py, fla's rules) on
        the inputs the chain gave it, the gated norm against float64 on the recurrence's output and
        g2, o_proj against f32 on core; every output finite."""
        layer = self.layers[0]
        before = {name: getattr(layer, name).clone() for name in ("prefix", "delta", "blocks", "conv_state", "state")}
        self.poison(layer)
        self.step(0)
        if layer.out.is_cuda:
            torch.cuda.synchronize()
        results = []
        # AttnRes in float64 from the bf16-rounded prefix + delta.
        prefix = (before["prefix"].double() + before["delta"].double()).to(torch.bfloat16).double()
        sources = torch.cat((before["blocks"][:, :NBLOCKS].double(), prefix.unsqueeze(1)), 1)
        c = layer.ares_norm.double() * layer.ares_proj.double()
        weights = torch.softmax((sources * c).sum(-1) / torch.sqrt(sources.pow(2).mean(-1) + EPS), dim=1)
        mixed = (weights.unsqueeze(-1) * sources).sum(1)
        x = mixed / torch.sqrt(mixed.pow(2).mean(-1, keepdim=True) + EPS) * layer.in_norm.double()
        results.append(("attn_res", compare(self.x, x, 1e-2)))
        # The conv from the state before and the bf16 projections this step made.
        n, q, pl = self.requests, self.q, PROJECTION
        slots = self.state_indices[:, 0].long().tolist()
        accepted = self.num_accepted.tolist()
        seqs = [torch.cat((before["conv_state"][slots[r], accepted[r] - 1:accepted[r] + 2],
                           self.proj[r * q:(r + 1) * q, :3 * pl])).double() for r in range(n)]
        w = layer.conv_w.double()
        outs = []
        for seq in seqs:
            acc = sum(seq[j:j + q] * w[:, j] for j in range(4))
            outs.append(acc * torch.sigmoid(acc))
        conv = torch.cat(outs).view(self.t, 3, pl).transpose(0, 1)
        results.append(("conv", compare(self.conv_out(), conv, 1e-2)))
        stored = all(torch.equal(layer.conv_state[slots[r], :q + 2].double(), seqs[r][1:]) for r in range(n))
        results.append(("conv state", "ok" if stored else "FAIL the new conv state differs"))
        inputs = self.kda_inputs(layer, state=before["state"])
        o = self.rec_out()
        kda = check_kda("fla", inputs, o, layer.state, reference_for(inputs), as_numpy(before["state"]))
        results.append(("rec", kda.summary()))
        # The gated norm (k3_layer.md 4.5) on the recurrence's bf16 output and in_proj's g2.
        od = o.double()
        g2 = self.proj[:, _G2:_G2 + PROJECTION].view(self.t, HEADS, HEAD_DIM).double()
        y = od / torch.sqrt(od.pow(2).mean(-1, keepdim=True) + EPS) * layer.o_norm.double() * torch.sigmoid(g2)
        core, out = self.core_out(), self.layer_out(layer)
        results.append(("norm", compare(core.view(self.t, HEADS, HEAD_DIM), y, 1e-2)))
        for name, value in (("core", core), ("out", out)):
            if not torch.isfinite(value.float()).all():
                results.append((name, "FAIL non-finite"))
        results.append(("o_proj", compare(out, core.float() @ layer.w_o.float().t(), 1e-2)))
        failed = [f"{name} {text}" for name, text in results if not text.startswith("ok")]
        if failed:
            return "FAIL " + "; ".join(failed)
        return "ok " + ", ".join(f"{name} {text[3:]}" for name, text in results if text[3:])


def _us(value: float | None, why: str) -> str:
    return f"{value:.2f} us" if value is not None else why


def _ours(ctx: Context) -> OursRun | None:
    path = ctx.shapes.get("k1_json")
    if not path:
        return None
    try:
        return load_k1_json(path)
    except (OSError, ValueError) as err:
        ctx.log(f"  kda_half: --k1-json {path}: {err}")
        return OursRun(False, f"unreadable --k1-json: {err}", "", 0.0, {})


def _stock(ctx: Context):
    """vLLM's stock kernels loaded through the shims, or why they cannot run (a string)."""
    from bench.peers.vllm_shims import default_peers_dir, load_stock_kernels

    peers = ctx.shapes.get("stock_peers", default_peers_dir())
    try:
        return load_stock_kernels(peers)
    except Exception as err:  # noqa: BLE001 (a peer that cannot load costs only its own column)
        return f"could not run: {type(err).__name__}: {err}"[:300]


def run(ctx: Context) -> list[Row]:
    from bench.peers.vllm_kda_half import Stock

    rows: list[Row] = []
    lines: list[HalfLine] = []
    ours = _ours(ctx)
    have_fla = fla_version() is not None
    kernels = _stock(ctx)
    if isinstance(kernels, str):
        ctx.log(f"  kda_half stock: {kernels}")
    for q, requests in ctx.shapes.get("kda_half", SHAPES):
        nbytes = half_bytes(requests, q)
        mine = ours.shapes.get((requests, q)) if ours is not None and ours.gpu else None
        if mine is not None and mine.nbytes != nbytes:
            ctx.log(f"  kda_half N={requests} q={q}: k1_bench counts {mine.nbytes} bytes, this table {nbytes}")
        shape = f"N={requests} q={q} T={requests * q}"
        line = HalfLine(requests, q, nbytes, nbytes / ctx.copy_bandwidth * 1e6 if ctx.copy_bandwidth else 0.0,
                        None, ours=mine)
        chains, absent = {}, {}
        if isinstance(kernels, str):
            absent[STOCK] = kernels
        else:
            chains[STOCK] = Stock(kernels, requests, q, ctx.device, ctx.l2_bytes(), seed=17 * requests + q + 1)
        if have_fla:
            chains[UNFUSED] = Unfused(requests, q, ctx.device, ctx.l2_bytes(), seed=17 * requests + q)
        else:
            absent[UNFUSED] = "fla not installed"

        def check(name: str, after: bool, chains=chains) -> str:
            return chains[name].check()

        copies = max((chain.copies for chain in chains.values()), default=1)
        if chains:
            row = measure_row(ctx, "kda_half", shape, nbytes, copies, {name: c.step for name, c in chains.items()},
                              check, absent=absent)
        else:
            row = Row("kda_half", shape, nbytes)
            for name, why in absent.items():
                row.results[name] = Result(name, status=why)
        for name in (STOCK, UNFUSED):
            result = row.results.get(name)
            status = result.status if result is not None else absent.get(name, "not run")
            if name == STOCK:
                line.stock_us, line.stock_status = row.time_us(STOCK), status
                line.stock_check = result.check if result is not None else ""
            else:
                line.unfused_us, line.unfused_status = row.time_us(UNFUSED), status
                line.check = result.check if result is not None else ""
        if mine is not None:
            row.results[OURS] = Result(OURS, timing=Timing(mine.half_median_us, mine.half_best_us, mine.half_median_us,
                                                            launches=1, copies=1),
                                       check=f"k1_bench (K1 {mine.k1_median_us:.2f} us, gemv {mine.gemv})")
        else:
            why = "no --k1-json" if ours is None else ours.reason if not ours.gpu else "not in --k1-json"
            row.results[OURS] = Result(OURS, status=why)
        rows.append(row)
        lines.append(line)
        ctx.log(f"  kda_half {shape}: stock {_us(line.stock_us, line.stock_status)}, unfused "
                f"{_us(line.unfused_us, line.unfused_status)}, ours "
                f"{_us(mine.half_median_us if mine else None, 'not given')}")
        del chains
        if ctx.device.startswith("cuda"):
            torch.cuda.empty_cache()
    ctx.log(format_half_table(lines, ctx.copy_bandwidth, ours))
    return rows
