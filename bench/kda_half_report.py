"""The KDA half's numbers without torch: its shapes and bytes, k1_bench's --json file, the table.

The KDA half of one K3 layer on one TP8 rank (rank 0, KDA layer 1: one block source, a pending
delta) is K1 (kernels/k3/k1.h: AttnRes, in_proj, f_b, conv, gates, recurrence, gated RMSNorm)
plus o_proj (core [T, 1536] x W_o^T, the rank's partial [T, 7168]; no all-reduce). Ours is timed
by `kernels/k3/k1_bench --json FILE` (C++); the unfused path by bench/tables/kda_half.py. This
module joins the two: it needs only the standard library, so its tests run anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.json_fields import json_field, json_object

# K3 at TP 8, rank 0 (k3_layer.md 1.2).
HIDDEN = 7168  # H
HEADS = 12  # NHl
HEAD_DIM = 128
PROJECTION = HEADS * HEAD_DIM  # Pl = 1536
F_A = 128  # f_a rows (replicated)
IN_PROJ_ROWS = 6288  # q | k | v | g2 (Pl each) | f_a 128 | beta NHl | pad to 16
NBLOCKS = 1  # layer 1: the embedding block, then the prefix
BLOCK_BANK = 8  # B [T, 8, H]
EPS = 1e-5  # AttnRes norm, input_layernorm, o_norm
LOWER_BOUND = -5.0

# (q, N) in k1_bench's order.
SHAPES = tuple((q, n) for q in (4, 2) for n in (1, 2, 4))

GOAL_UNFUSED = 1.65  # unfused / ours
GOAL_STOCK = 1.3  # vLLM 0.33.0's stock half / ours, timed in the same run (issue 43)
GOAL_FLOOR = 1.3  # ours / its HBM floor (issue 43)
# What the stock column timed (bench/peers/vllm_kda_half.py): vLLM's Triton kernels with the cuBLAS
# form of in_proj, f_b and o_proj. At 1 <= T <= 14 vLLM 0.33.0 in a full CUDA graph on SM90 would
# run the CuTe DSL projection overlap instead, whose wheels cannot reach the GPU machine (docs/bench.md).
STOCK_FORM = ("stock: vLLM 0.33.0's Triton AttnRes, conv update, fused recurrence and gated norm from its wheel, "
              "in_proj / f_b / o_proj through cuBLAS (F.linear), one CUDA graph; the cuBLAS form is timed at "
              "every T (vLLM runs its CuTe DSL projection overlap at T <= 14, not installable on the GPU machine)")


def state_len(q: int) -> int:
    """The conv state entries per channel k1_bench builds with (the least K1 accepts)."""
    return q + 2


def k1_bytes(requests: int, q: int, delta: bool = True) -> int:
    """The bytes K1 must move (k1_bench's must_move at these shapes): every weight once, the prefix
    (read, and with a delta the delta read and the prefix written), the block source, the conv window
    read and q + 2 entries written, one state read and q written per request and head, core written."""
    t, h, pl, n = requests * q, HIDDEN, PROJECTION, requests
    nbytes = IN_PROJ_ROWS * h * 2 + pl * F_A * 2 + 3 * pl * 4 * 4 + 3 * h * 2 + 2 * pl * 4
    nbytes += t * h * 2 * (3 if delta else 1)
    nbytes += t * NBLOCKS * h * 2
    nbytes += n * 3 * pl * (3 + q + 2) * 2
    nbytes += n * HEADS * HEAD_DIM * HEAD_DIM * 4 * (1 + q)
    nbytes += t * pl * 2
    return nbytes


def half_bytes(requests: int, q: int) -> int:
    """K1's bytes plus o_proj's: W_o [H, Pl], core read back, the partial [T, H] written (bf16)."""
    t = requests * q
    return k1_bytes(requests, q) + HIDDEN * PROJECTION * 2 + t * PROJECTION * 2 + t * HIDDEN * 2


@dataclass
class OursShape:
    """One shape of k1_bench's --json file (times in us)."""

    name: str
    requests: int
    q: int
    nbytes: int
    k1_median_us: float
    k1_best_us: float
    k1_floor_us: float
    half_median_us: float
    half_best_us: float
    floor_us: float
    gemv: str = ""


@dataclass
class OursRun:
    """k1_bench's --json file: the copy bandwidth of its run and its shapes by (N, q); or, when it
    ran without a GPU, why (gpu False, reason)."""

    gpu: bool
    reason: str
    device: str
    copy_bandwidth: float  # bytes read + written per second, measured in k1_bench's run
    shapes: dict[tuple[int, int], OursShape]


class K1JsonError(ValueError):
    """The file is not k1_bench's --json output."""


def _field(doc: dict, key: str, kind: type, where: str):
    return json_field(doc, key, kind, where, K1JsonError)


def parse_k1_json(text: str, where: str = "k1 json") -> OursRun:
    """Parses k1_bench's --json output; K1JsonError names what is missing or malformed."""
    doc = json_object(text, where, K1JsonError)
    gpu = _field(doc, "gpu", bool, where)
    if not gpu:
        return OursRun(False, str(doc.get("reason", "no reason given")), "", 0.0, {})
    shapes = {}
    for i, entry in enumerate(_field(doc, "shapes", list, where)):
        at = f"{where}: shapes[{i}]"
        if not isinstance(entry, dict):
            raise K1JsonError(f"{at}: expected an object")
        shape = OursShape(
            name=_field(entry, "name", str, at),
            requests=_field(entry, "N", int, at),
            q=_field(entry, "q", int, at),
            nbytes=_field(entry, "bytes", int, at),
            k1_median_us=_field(entry, "k1_median_us", float, at),
            k1_best_us=_field(entry, "k1_best_us", float, at),
            k1_floor_us=_field(entry, "k1_floor_us", float, at),
            half_median_us=_field(entry, "half_median_us", float, at),
            half_best_us=_field(entry, "half_best_us", float, at),
            floor_us=_field(entry, "floor_us", float, at),
            gemv=str(entry.get("gemv", "")),
        )
        shapes[(shape.requests, shape.q)] = shape
    return OursRun(True, "", str(doc.get("device", "")), _field(doc, "copy_bandwidth_bytes_per_s", float, where),
                   shapes)


def load_k1_json(path: str | Path) -> OursRun:
    return parse_k1_json(Path(path).read_text(), str(path))


@dataclass
class HalfLine:
    """One line of the table: the unfused path's time (None: not measured, with why) beside ours."""

    requests: int
    q: int
    nbytes: int
    floor_us: float  # the bytes at this run's copy bandwidth
    unfused_us: float | None
    unfused_status: str = "ok"
    check: str = ""
    ours: OursShape | None = None
    stock_us: float | None = None
    stock_status: str = "not run"
    stock_check: str = ""


def _ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num and den else None


def _fmt(value: float | None, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def format_half_table(lines: list[HalfLine], copy_bandwidth: float, ours: OursRun | None) -> str:
    """The table: per shape bytes, floor, vLLM's stock half (its time over the floor), the unfused path,
    ours (K1 + o_proj) with its ratio to the floor (time / floor, k1_bench's own run's bandwidth) and
    the speedups stock / ours and unfused / ours; then each peer's check."""
    if ours is None:
        source = "ours: not measured (no --k1-json)"
    elif not ours.gpu:
        source = f"ours: k1_bench ran without a GPU ({ours.reason})"
    else:
        source = (f"ours: k1_bench on {ours.device or 'the GPU'}, its copy {ours.copy_bandwidth / 1e12:.3f} TB/s, "
                  "cold L2 per launch pair")
    header = ["shape", "MB", "floor us", "stock us", "stock/floor", "unfused us", "ours us", "ours/floor",
              "stock/ours", "unfused/ours", "K1 us", "K1/floor"]
    body = []
    for line in lines:
        mine = ours.shapes.get((line.requests, line.q)) if ours is not None and ours.gpu else None
        ours_us = mine.half_median_us if mine else None
        body.append([
            f"N={line.requests} q={line.q} T={line.requests * line.q}",
            f"{line.nbytes / 1e6:.2f}",
            f"{line.floor_us:.2f}",
            _fmt(line.stock_us, ".2f", _short(line.stock_status)),
            _fmt(_ratio(line.stock_us, line.floor_us), ".3f"),
            _fmt(line.unfused_us, ".2f", _short(line.unfused_status)),
            _fmt(ours_us, ".2f"),
            _fmt(_ratio(ours_us, mine.floor_us if mine else None), ".3f"),
            _fmt(_ratio(line.stock_us, ours_us), ".2f"),
            _fmt(_ratio(line.unfused_us, ours_us), ".2f"),
            _fmt(mine.k1_median_us if mine else None, ".2f"),
            _fmt(_ratio(mine.k1_median_us, mine.k1_floor_us) if mine else None, ".3f"),
        ])
    widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]
    out = [f"== KDA half (K1 + o_proj), K3 TP8 rank 0, layer 1 (copy {copy_bandwidth / 1e12:.3f} TB/s; "
           f"goals: stock/ours >= {GOAL_STOCK}, unfused/ours >= {GOAL_UNFUSED}, ours/floor <= {GOAL_FLOOR})",
           f"   {source}", f"   {STOCK_FORM}"]
    for row in [header] + body:
        out.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    for line in lines:
        shape = f"N={line.requests} q={line.q}"
        for name, check in (("stock", line.stock_check), ("unfused", line.check)):
            if check:
                out.append(f"   check {shape} {name}: {check}")
    return "\n".join(out)


def _short(status: str) -> str:
    """A peer's status in a cell: "-" when it ran, else its reason cut to 40 characters."""
    if status == "ok":
        return "-"
    return status if len(status) <= 40 else status[:37] + "..."
