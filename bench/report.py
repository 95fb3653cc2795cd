"""Rows of results and their plain-text, JSON and CSV forms.

A row is one shape of one table: each implementation's timing (or why it has none), its
correctness check, the compulsory bytes, and from those the HBM floor (bytes over the copy
bandwidth measured in the same run). Ratios are peer time over our time: above 1, ours is faster.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from bench.timing import Timing

OURS = "ours"


@dataclass
class Result:
    """One implementation on one row."""

    impl: str
    timing: Timing | None = None
    status: str = "ok"  # "ok", "not exported", "error: ..."
    check: str = ""  # "ok 3.1e-03", "FAIL ...", "" when not checked


@dataclass
class Row:
    table: str
    shape: str
    nbytes: int  # compulsory bytes: inputs read once, outputs written once
    flops: int = 0
    results: dict[str, Result] = field(default_factory=dict)

    def floor_us(self, copy_bandwidth: float) -> float:
        return self.nbytes / copy_bandwidth * 1e6

    def time_us(self, impl: str) -> float | None:
        result = self.results.get(impl)
        return result.timing.median_us if result and result.timing else None

    def ratio(self, peer: str) -> float | None:
        """Peer time over our time."""
        ours, theirs = self.time_us(OURS), self.time_us(peer)
        return theirs / ours if ours and theirs else None

    def floor_fraction(self, impl: str, copy_bandwidth: float) -> float | None:
        """Floor time over this implementation's time: 1.0 means copy speed."""
        t = self.time_us(impl)
        return self.floor_us(copy_bandwidth) / t if t else None

    def as_dict(self, copy_bandwidth: float) -> dict:
        return {
            "table": self.table,
            "shape": self.shape,
            "bytes": self.nbytes,
            "flops": self.flops,
            "floor_us": self.floor_us(copy_bandwidth),
            "results": {
                name: {
                    "status": r.status,
                    "check": r.check,
                    "timing": r.timing.as_dict() if r.timing else None,
                    "floor_fraction": self.floor_fraction(name, copy_bandwidth),
                    "ratio_peer_over_ours": self.ratio(name) if name != OURS else None,
                }
                for name, r in self.results.items()
            },
        }


def _cell(row: Row, impl: str, copy_bandwidth: float, unit: str) -> str:
    result = row.results.get(impl)
    if result is None:
        return "-"
    if result.timing is None:
        return result.status if result.status != "ok" else "no time"
    scale = {"us": 1.0, "ms": 1e-3}[unit]
    text = f"{result.timing.median_us * scale:9.2f}{unit}"
    if row.nbytes:
        text += f" {100 * row.floor_fraction(impl, copy_bandwidth):4.0f}%"
    if row.flops:
        text += f" {row.flops / (result.timing.median_us * 1e-6) / 1e12:5.0f}TF"
    if impl != OURS and row.ratio(impl) is not None:
        text += f" x{row.ratio(impl):.2f}"
    return text


def format_table(title: str, rows: list[Row], copy_bandwidth: float, unit: str = "us") -> str:
    """A plain-text table: per implementation, median time, % of the HBM floor (floor / time),
    TFLOP/s when the row has flops, and for peers the ratio peer / ours."""
    impls: list[str] = []
    for row in rows:
        for name in row.results:
            if name not in impls:
                impls.append(name)
    impls.sort(key=lambda name: name != OURS)
    header = ["shape", "MB", "floor us"] + impls + ["checks"]
    body = []
    for row in rows:
        checks = ", ".join(f"{n} {r.check}" for n, r in row.results.items() if r.check)
        body.append(
            [row.shape, f"{row.nbytes / 1e6:.2f}", f"{row.floor_us(copy_bandwidth):.2f}"]
            + [_cell(row, name, copy_bandwidth, unit) for name in impls]
            + [checks]
        )
    widths = [max(len(line[i]) for line in [header] + body) for i in range(len(header))]
    lines = [f"== {title} (copy {copy_bandwidth / 1e12:.3f} TB/s; % = floor time / time; x = peer time / our time)"]
    for line in [header] + body:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
    return "\n".join(lines)


def write_results(out_dir: Path, meta: dict, rows: list[Row], copy_bandwidth: float) -> None:
    """results.json (everything, with samples) and results.csv (one line per row and impl)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = dict(meta, copy_bandwidth_bytes_per_s=copy_bandwidth, rows=[r.as_dict(copy_bandwidth) for r in rows])
    (out_dir / "results.json").write_text(json.dumps(doc, indent=1))
    with open(out_dir / "results.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["table", "shape", "impl", "status", "median_us", "min_us", "max_us", "bytes", "floor_us",
             "floor_fraction", "ratio_peer_over_ours", "tflops", "check"]
        )
        for row in rows:
            for name, r in row.results.items():
                t = r.timing
                ratio = row.ratio(name) if name != OURS else None
                fraction = row.floor_fraction(name, copy_bandwidth)
                tflops = row.flops / (t.median_us * 1e-6) / 1e12 if t and row.flops else None
                writer.writerow(
                    [row.table, row.shape, name, r.status,
                     f"{t.median_us:.6g}" if t else "", f"{t.min_us:.6g}" if t else "", f"{t.max_us:.6g}" if t else "",
                     row.nbytes, f"{row.floor_us(copy_bandwidth):.6g}",
                     f"{fraction:.5g}" if fraction else "", f"{ratio:.5g}" if ratio else "",
                     f"{tflops:.1f}" if tflops else "", r.check]
                )
