"""One command for every side-by-side table: `python3 -m bench.run --ours DIR --out DIR`.

Measures the copy bandwidth first (the HBM floor reference of every row), then each table in
turn, printing each table as soon as it is done and rewriting results.json / results.csv after
each, so that a run cut short still leaves what it measured. The copy bandwidth is measured again
at the end: a large drift between the two says the clocks moved during the run.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time
from pathlib import Path

import torch

from bench.measure import Context
from bench.monotile_kernels import KernelDir
from bench.peers.fla_kda import fla_version
from bench.report import Row, format_table, write_results
from bench.tables import copy as copy_table
from bench.peers.moe_mxfp4 import triton_kernels_version
from bench.tables import gemm, gemv, jit, kda, kda_half, moe, rows
from bench.timing import DEFAULT_REPEATS, copy_bandwidth, copy_bandwidth_methods

TABLES = {"copy": copy_table, "gemv": gemv, "rows": rows, "gemm": gemm, "kda": kda, "jit": jit, "kda_half": kda_half,
          "moe": moe}
TITLES = {
    "copy": "1. copy: ours vs the driver's device-to-device copy",
    "gemv": "2. decode GEMV / small-M GEMM y = x W^T (bf16, f32 acc)",
    "rows": "3. fused RMSNorm and row softmax",
    "gemm": "4. square bf16 GEMM",
    "kda": "5. KDA spec-verify recurrence (q = 4)",
    "jit": "6. JIT: first call in a fresh process",
    "kda_half": "7. KDA half (K1 + o_proj, K3 TP8 rank): vLLM's stock half and the unfused path; ours from k1_bench --json",
    "moe": "8. K2 MoE (K3 TP8 rank): triton_kernels MXFP4 MoE and the unfused path; ours from k2_bench --json",
}


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("--ours", type=Path, default=None, help="directory of exported kernels (<name>.cubin + <name>.json)")
    parser.add_argument("--out", type=Path, default=Path("out/bench"), help="where results.json and results.csv go")
    parser.add_argument("--tables", default=",".join(TABLES), help=f"comma-separated subset of {','.join(TABLES)}")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="timed graph replays per implementation")
    parser.add_argument("--quick", action="store_true", help="no tuning of the Triton peers, one JIT trial")
    parser.add_argument("--k1-json", type=Path, default=None,
                        help="kernels/k3/k1_bench --json output: ours in the kda_half table (absent: the peers only)")
    parser.add_argument("--k2-json", type=Path, default=None,
                        help="kernels/k3/k2_bench --json output: ours in the moe table (absent: peers only)")
    parser.add_argument("--list-kernels", action="store_true", help="print the kernel names and parameters ours must export")
    return parser.parse_args(argv)


def list_kernels() -> str:
    lines = []
    for name, module in TABLES.items():
        for kernel, params in module.KERNELS.items():
            lines.append(f"{name:5s} {kernel}: {params}")
    return "\n".join(lines)


def _meta(args: argparse.Namespace) -> dict:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    import triton

    return {
        "command": " ".join(["python3", "-m", "bench.run", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": props.name,
        "sm_count": props.multi_processor_count,
        "l2_bytes": props.L2_cache_size,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "fla": fla_version(),
        "triton_kernels": triton_kernels_version(),
        "ours_dir": str(args.ours) if args.ours else None,
        "ours_kernels": KernelDir(args.ours).names() if args.ours else [],
    }


def main(argv: list[str]) -> int:
    args = _parse(argv)
    if args.list_kernels:
        print(list_kernels())
        return 0
    if args.ours is not None and not args.ours.is_dir():
        print(f"bench.run: --ours {args.ours}: not a directory; expected the exported kernels "
              f"(<name>.cubin and <name>.json)", file=sys.stderr)
        return 2
    wanted = [t.strip() for t in args.tables.split(",") if t.strip()]
    unknown = [t for t in wanted if t not in TABLES]
    if unknown:
        print(f"bench.run: unknown tables {unknown}; expected a subset of {list(TABLES)}", file=sys.stderr)
        return 2
    if args.k1_json is not None and not args.k1_json.is_file():
        print(f"bench.run: --k1-json {args.k1_json}: no such file; expected kernels/k3/k1_bench --json output",
              file=sys.stderr)
        return 2
    if args.k2_json is not None and not args.k2_json.is_file():
        print(f"bench.run: --k2-json {args.k2_json}: no such file; expected kernels/k3/k2_bench --json output",
              file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("bench.run: no CUDA device; the benchmarks need the GPU machine", file=sys.stderr)
        return 2
    meta = _meta(args)
    print(" ".join(f"{k}={v}" for k, v in meta.items() if k != "ours_kernels"), flush=True)
    print(f"ours: {len(meta['ours_kernels'])} exported kernels", flush=True)
    bandwidth, bw_timing = copy_bandwidth(repeats=args.repeats)
    meta["copy_bandwidth_start"] = bandwidth
    print(f"copy bandwidth (1 GiB device-to-device, read + written): {bandwidth / 1e12:.3f} TB/s "
          f"(spread {100 * bw_timing.spread:.1f}%; outside a graph, as gpu_copy_bench)", flush=True)
    try:
        methods = copy_bandwidth_methods(repeats=args.repeats)
        meta["copy_bandwidth_methods"] = methods
        print("the same copy by method: " + ", ".join(f"{k} {v / 1e12:.3f} TB/s" for k, v in methods.items()),
              flush=True)
    except Exception as err:  # a record, not a number any row depends on
        print(f"the same copy by method: error: {type(err).__name__}: {err}", flush=True)
    torch.cuda.empty_cache()
    ctx = Context(KernelDir(args.ours), copy_bandwidth=bandwidth, repeats=args.repeats, quick=args.quick)
    if args.k1_json is not None:
        ctx.shapes["k1_json"] = str(args.k1_json)
        meta["k1_json"] = str(args.k1_json)
    if args.k2_json is not None:
        ctx.shapes["k2_json"] = str(args.k2_json)
        meta["k2_json"] = str(args.k2_json)
    all_rows: list[Row] = []
    for name in wanted:
        started = time.perf_counter()
        table_rows = TABLES[name].run(ctx)
        all_rows += table_rows
        unit = "ms" if name == "jit" else "us"
        print(format_table(TITLES[name], table_rows, bandwidth, unit), flush=True)
        print(f"   ({time.perf_counter() - started:.0f} s)", flush=True)
        write_results(args.out, meta, all_rows, bandwidth)
    end_bandwidth, _ = copy_bandwidth(repeats=args.repeats)
    meta["copy_bandwidth_end"] = end_bandwidth
    print(f"copy bandwidth at the end: {end_bandwidth / 1e12:.3f} TB/s "
          f"({100 * (end_bandwidth / bandwidth - 1):+.1f}% from the start)", flush=True)
    write_results(args.out, meta, all_rows, bandwidth)
    print(f"results: {args.out / 'results.json'} and {args.out / 'results.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
