"""K2's exchange beside NCCL's all-reduce at [T, 7168] bf16, one rank a GPU, in one run:
`python3 -m bench.allreduce [--exchange-bench PATH] [--gpus N] [--json FILE]`.

Ours is `exchange_bench` (runtime/decode/exchange_bench.cpp), run first: two forked processes at 2
ranks, `mpirun -np N exchange_bench --mpi` above (each rank on GPU local rank % GPUs); its --json
file gives, per T, the chain (exchanges back to back on each rank's stream, the slowest rank's events
over the count) and the exchange's span by the GPU's global timer. Then NCCL's all-reduce
(bench/peers/nccl_allreduce.py: torch.distributed, one process a GPU) on the same sizes, a loop of
all-reduces and the same loop as a CUDA graph. The table puts them side by side: our chain's time
over NCCL's loop, and our captured chain's over NCCL's graph (below 1 ours is faster; the goal,
<= 0.5, judged on the graphs where both ran). With fewer than 2 GPUs it
says why and exits 0. `--cpu` runs the whole harness on the CPU (exchange_bench --cpu, gloo): a check
of the harness, whose times are not a GPU's.

Only the standard library is imported at the top: the command line, the table and exchange_bench's
file are tested without torch (bench/tests/test_allreduce.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

GOAL = 0.5
DEFAULT_TOKENS = "4,8,16"
HIDDEN = 7168
REPO = Path(__file__).resolve().parents[1]
EXCHANGE_BENCH_CANDIDATES = ("build-gpu/runtime/decode/exchange_bench", "build/runtime/decode/exchange_bench")


class OursError(ValueError):
    """exchange_bench's --json file does not say what the table needs."""


@dataclass
class OursRow:
    tokens: int
    chain_us: float
    exchange_us: float
    launch_us: float
    graph_us: float | None = None  # the chain captured once and replayed


@dataclass
class Ours:
    rows: dict[int, OursRow] = field(default_factory=dict)
    note: str = ""          # why there are no rows ("no GPU: ...", "could not run: ...")
    device: str = ""
    shared_gpu: bool = False
    command: str = ""


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m bench.allreduce", description=__doc__.splitlines()[0])
    parser.add_argument("--exchange-bench", type=Path, default=None,
                        help="ours: the exchange_bench binary (default $MONOTILE_EXCHANGE_BENCH, else "
                             + " or ".join(EXCHANGE_BENCH_CANDIDATES) + ")")
    parser.add_argument("--gpus", type=int, default=None, help="ranks, one a GPU (default: every visible GPU)")
    parser.add_argument("--tokens", default=DEFAULT_TOKENS, help=f"rows T of [T, H] (default {DEFAULT_TOKENS})")
    parser.add_argument("--hidden", type=int, default=HIDDEN, help=f"H (default {HIDDEN})")
    parser.add_argument("--iterations", type=int, default=20, help="timed loops a row (default 20)")
    parser.add_argument("--chain", type=int, default=50, help="all-reduces (exchanges) a loop (default 50)")
    parser.add_argument("--mpirun", default="mpirun", help="the launcher for more than 2 of our ranks (default mpirun)")
    parser.add_argument("--cpu", action="store_true", help="the harness on the CPU: gloo, exchange_bench --cpu")
    parser.add_argument("--ranks", type=int, default=2, help="with --cpu: the ranks (default 2)")
    parser.add_argument("--json", type=Path, default=None, help="write both sides' rows to this file")
    return parser.parse_args(argv)


def parse_tokens(text: str) -> list[int]:
    try:
        tokens = [int(part) for part in text.split(",")]
    except ValueError:
        tokens = []
    if not tokens or any(t < 1 or t > 16 for t in tokens):
        raise ValueError(f"--tokens {text}: expected counts of rows in 1..16, e.g. {DEFAULT_TOKENS}")
    return tokens


def skip_reason(gpus: int) -> str | None:
    """Why the comparison cannot run on a machine of `gpus` GPUs, or None."""
    if gpus >= 2:
        return None
    return (f"{gpus} GPU{'' if gpus == 1 else 's'} visible: NCCL's all-reduce against K2's exchange needs 2 "
            "or more, one rank a GPU (exchange_bench alone times ranks sharing one GPU)")


def find_exchange_bench(given: Path | None) -> Path | None:
    if given is not None:
        return given
    if os.environ.get("MONOTILE_EXCHANGE_BENCH"):
        return Path(os.environ["MONOTILE_EXCHANGE_BENCH"])
    for candidate in EXCHANGE_BENCH_CANDIDATES:
        if (REPO / candidate).is_file():
            return REPO / candidate
    return None


def exchange_command(binary: Path, ranks: int, tokens: list[int], hidden: int, iterations: int, chain: int,
                     cpu: bool, json_path: Path, mpirun: str) -> list[str]:
    """exchange_bench's command line: its two forked ranks at 2, MPI's world above."""
    args = ["--json", str(json_path), "--tokens", ",".join(map(str, tokens)), "--hidden", str(hidden),
            "--iterations", str(iterations), "--chain", str(chain)] + (["--cpu"] if cpu else [])
    if ranks == 2:
        return [str(binary)] + args
    return shlex.split(mpirun) + ["-np", str(ranks), str(binary), "--mpi"] + args


def parse_ours(doc: dict, ranks: int, hidden: int) -> Ours:
    """exchange_bench's --json document: its rows by T, or why it has none."""
    if doc.get("gpu") is False:
        return Ours(note=f"not timed: {doc.get('reason', 'no reason given')}")
    for key in ("ranks", "shapes", "device"):
        if key not in doc:
            raise OursError(f"exchange_bench's file has no \"{key}\"; expected a file of this exchange_bench "
                            "(--json)")
    if doc["ranks"] != ranks:
        raise OursError(f"exchange_bench ran {doc['ranks']} ranks, expected {ranks}")
    ours = Ours(device=doc["device"], shared_gpu=bool(doc.get("shared_gpu")))
    for shape in doc["shapes"]:
        if shape.get("hidden") != hidden:
            raise OursError(f"exchange_bench's row of T {shape.get('tokens')} has H {shape.get('hidden')}, "
                            f"expected {hidden}")
        graph = shape.get("graph_us")
        ours.rows[int(shape["tokens"])] = OursRow(int(shape["tokens"]), float(shape["chain_us"]),
                                                  float(shape["exchange_us"]), float(shape["launch_us"]),
                                                  None if graph is None else float(graph))
    return ours


def run_ours(binary: Path | None, ranks: int, tokens: list[int], hidden: int, iterations: int, chain: int,
             cpu: bool, mpirun: str, timeout_s: float = 600) -> Ours:
    if binary is None or not binary.is_file():
        where = binary if binary is not None else " or ".join(EXCHANGE_BENCH_CANDIDATES)
        return Ours(note=f"could not run: no exchange_bench at {where}; hint: --exchange-bench PATH")
    with tempfile.TemporaryDirectory() as tmp:
        json_path = Path(tmp) / "exchange.json"
        command = exchange_command(binary, ranks, tokens, hidden, iterations, chain, cpu, json_path, mpirun)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as error:
            return Ours(note=f"could not run: {error}", command=shlex.join(command))
        if done.returncode != 0 or not json_path.is_file():
            # The last line that says something (mpirun frames its messages in rules of dashes).
            said = [line for line in (done.stderr + done.stdout).splitlines() if line.strip("- \t")]
            last = said[-1].strip() if said else "no output"
            return Ours(note=f"could not run: exit {done.returncode}: {last}", command=shlex.join(command))
        try:
            ours = parse_ours(json.loads(json_path.read_text()), ranks, hidden)
        except (OursError, ValueError, KeyError) as error:
            return Ours(note=f"could not read its --json file: {error}", command=shlex.join(command))
        ours.command = shlex.join(command)
        return ours


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_table(ranks: int, hidden: int, tokens: list[int], ours: Ours, nccl, nccl_note: str = "") -> str:
    """The side-by-side table; `nccl` is a bench.peers.nccl_allreduce.NcclRun, or None with
    `nccl_note` saying why."""
    name = "NCCL" if nccl is None else f"NCCL {nccl.version}" if nccl.backend == "nccl" else "gloo"
    where = nccl.device if nccl is not None else ours.device
    lines = [f"== all-reduce [T, {hidden}] bf16 across {ranks} ranks, one a GPU ({where}): "
             f"K2's exchange (exchange_bench) beside {name}",
             f"ours: {ours.command or '-'}" + (f" ({ours.note})" if ours.note else "")]
    if nccl is None:
        lines.append(f"NCCL: {nccl_note or 'not run'}")
    if ours.shared_gpu and ours.rows:
        lines.append("WARNING: exchange_bench's ranks shared one GPU: its times are not one rank a GPU")
    header = (f"{'T':>4} {'bytes':>9} {'ours chain us':>14} {'ours graph us':>14} {'ours span us':>13} "
              f"{'NCCL us':>9} {'NCCL graph us':>14} {'chain/NCCL':>11} {'graph/graph':>12}  goal <= {GOAL}  check")
    lines.append(header)
    for t in tokens:
        mine = ours.rows.get(t)
        theirs = nccl.rows.get(t) if nccl is not None else None
        chain = mine.chain_us if mine else None
        our_graph = mine.graph_us if mine else None
        loop = theirs.loop_us if theirs else None
        graph = theirs.graph_us if theirs else None
        ratio = chain / loop if chain and loop else None
        ratio_graph = our_graph / graph if our_graph and graph else None
        # The goal on the graphs where both have one (neither pays the host's launches), else the loops.
        judged = ratio_graph if ratio_graph is not None else ratio
        verdict = "-" if judged is None else ("met" if judged <= GOAL else "not met")
        check = theirs.check if theirs else "-"
        if theirs and theirs.graph_note:
            check += f"; graph: {theirs.graph_note}"
        lines.append(f"{t:>4} {t * hidden * 2:>9} {_us(chain):>14} {_us(our_graph):>14} "
                     f"{_us(mine.exchange_us if mine else None):>13} {_us(loop):>9} {_us(graph):>14} "
                     f"{_us(ratio):>11} {_us(ratio_graph):>12}  {verdict:<12}  {check}")
    lines.append("ours chain: exchanges back to back on each rank's stream, the slowest rank's events over the "
                 "count; ours graph: the same chain captured once and replayed; ours span: the global timers' span "
                 "of one exchange (each GPU's own clock across GPUs); NCCL: a loop of in-place all-reduces between "
                 "events, the slowest rank's, over the count; NCCL graph: the same loop as one CUDA graph; "
                 "chain/NCCL and graph/graph: our time over NCCL's (below 1 ours is faster); the goal is judged on "
                 "graph/graph where both ran, else on chain/NCCL")
    return "\n".join(lines)


def to_json(ranks: int, hidden: int, tokens: list[int], ours: Ours, nccl) -> dict:
    return {
        "ranks": ranks, "hidden": hidden, "goal_ours_over_nccl": GOAL,
        "ours": {"command": ours.command, "note": ours.note, "device": ours.device, "shared_gpu": ours.shared_gpu,
                 "rows": [vars(ours.rows[t]) for t in tokens if t in ours.rows]},
        "nccl": None if nccl is None else {
            "backend": nccl.backend, "version": nccl.version, "torch": nccl.torch_version, "device": nccl.device,
            "rows": [vars(nccl.rows[t]) for t in tokens if t in nccl.rows]},
    }


def main(argv: list[str]) -> int:
    opts = parse(argv)
    try:
        tokens = parse_tokens(opts.tokens)
    except ValueError as error:
        print(f"allreduce: {error}", file=sys.stderr)
        return 2
    for flag in ("iterations", "chain", "ranks", "hidden"):
        if getattr(opts, flag) < 1:
            print(f"allreduce: --{flag} {getattr(opts, flag)}: expected a positive count", file=sys.stderr)
            return 2
    try:
        import torch
    except ImportError as error:
        print(f"allreduce: torch is not importable ({error}); hint: run it with the GPU machine's python3, or "
              "see docs/bench.md for a venv", file=sys.stderr)
        return 2
    if opts.cpu:
        ranks = opts.ranks
    else:
        visible = torch.cuda.device_count()
        reason = skip_reason(visible)
        if reason is not None:
            print(f"allreduce: skipped: {reason}")
            return 0
        ranks = opts.gpus or visible
        if ranks < 2 or ranks > visible:
            print(f"allreduce: --gpus {ranks}: expected 2 to {visible}, the GPUs torch sees", file=sys.stderr)
            return 2
    ours = run_ours(find_exchange_bench(opts.exchange_bench), ranks, tokens, opts.hidden, opts.iterations,
                    opts.chain, opts.cpu, opts.mpirun)
    from bench.peers import nccl_allreduce

    nccl, nccl_note = None, ""
    try:
        nccl = nccl_allreduce.run(ranks, tokens, opts.hidden, opts.iterations, opts.chain, opts.cpu)
    except Exception as error:  # noqa: BLE001 - ours is still printed, with why NCCL is missing
        nccl_note = f"could not run: {type(error).__name__}: {error}".splitlines()[0]
    print(format_table(ranks, opts.hidden, tokens, ours, nccl, nccl_note), flush=True)
    if opts.json is not None:
        opts.json.write_text(json.dumps(to_json(ranks, opts.hidden, tokens, ours, nccl), indent=1) + "\n")
    if nccl is None:
        return 1
    failed = [t for t, row in nccl.rows.items() if row.check.startswith("FAIL")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
