#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's per-instruction source page: the share of
stall samples by reason, the instructions that hold the most samples, and windows of the listing
(a stage's code lies together) with their share, instructions executed and commonest opcodes.

Make the CSV on the GPU machine from a full profile of one launch (`--set full` samples warp stalls
per instruction; `--import-source no` keeps the report small):

    ncu --clock-control none -k regex:k3_k2 -s 3 -c 1 --set full --import-source no -o /tmp/k2 \\
        build-gpu/kernels/k3/k2_bench --iterations 2
    ncu -i /tmp/k2.ncu-rep --page source --csv --print-source sass | gzip > k2_sass.csv.gz
    scripts/ncu_stalls.py k2_sass.csv.gz [--top 40] [--window 500] [--range FIRST LAST]

--range prints every instruction from index FIRST to LAST (the indices the other tables print) with
its samples and its main stall reason: the code around a hot instruction, to tell which stage it is.

--lines LISTING charges the samples to the kernel's own C++ lines. Build the same kernel with
MONOTILE_LINE_INFO=1 on both machines (the profile's run and the listing): the lowering then writes
#line directives naming each DSL op's file and line, and the compiler a line table, which
`nvdisasm -g` prints above the instructions:

    MONOTILE_LINE_INFO=1 MONOTILE_JIT_DUMP_DIR=/tmp/d build/tools/monotile compile k3_k1_tp8_t4_q4 --target sm_90a
    ptxas -arch=sm_90a -lineinfo /tmp/d/k3_k1_tp8_t4_q4-sm_90a.ptx -o /tmp/k1.cubin
    nvdisasm -c -g /tmp/k1.cubin > /tmp/k1.sass
    scripts/ncu_stalls.py k1_sass.csv.gz --lines /tmp/k1.sass [--top 40]

The listing must be the profiled code instruction for instruction (the script checks the opcodes).
Instructions of an inlined helper of the generated source (its math functions) are charged to the
DSL line that ran before them.
"""

import argparse
import collections
import csv
import gzip
import os
import re
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def read(path):
    """The instruction rows and the stall-reason columns of the CSV (gzip or plain)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = list(csv.reader(f))
    # The first line names the kernel (ncu writes it where one kernel was profiled); then the header.
    skip = 1 if rows and rows[0] and rows[0][0] == "Kernel Name" else 0
    header = rows[skip] if len(rows) > skip else []
    body = rows[skip + 1:]
    columns = {name: i for i, name in enumerate(header)}
    for needed in (SAMPLES, EXECUTED, "Source"):
        if needed not in columns:
            sys.exit(f"ncu_stalls: no column '{needed}' in {path}: expected `--page source --csv --print-source sass`")
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    return body, columns, reasons


def number(row, columns, name):
    text = row[columns[name]]
    return int(text) if text and text.isdigit() else 0


def opcode(source):
    words = [w for w in source.split() if not w.startswith("@")]
    return words[0].split(".")[0] if words else ""


def listing_lines(path):
    """Each instruction's (opcode, "file:line") from an `nvdisasm -c -g` listing."""
    here, out = "?", []
    location = re.compile(r'//## File "([^"]+)", line (\d+)')
    instruction = re.compile(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?);")
    with open(path) as f:
        for line in f:
            found = location.search(line)
            if found:
                here = f"{os.path.basename(found.group(1))}:{found.group(2)}"
                continue
            found = instruction.match(line)
            if found:
                out.append((opcode(found.group(1)), here))
    return out


def by_line(body, columns, reasons, listing, top):
    if len(listing) != len(body):
        sys.exit(f"ncu_stalls: the listing has {len(listing)} instructions, the profile {len(body)}: not the same code")
    differ = sum(1 for row, (op, _) in zip(body, listing) if opcode(row[columns["Source"]]) != op)
    if differ:
        sys.exit(f"ncu_stalls: {differ} instructions differ between the listing and the profile: not the same code")
    samples, executed, why = collections.Counter(), collections.Counter(), collections.defaultdict(collections.Counter)
    last = "?"
    for row, (_, where) in zip(body, listing):
        # The generated source's own lines are its helpers, inlined where a DSL op called them.
        if not where.split(":")[0].endswith((".cu", ".hip")):
            last = where
        samples[last] += number(row, columns, SAMPLES)
        executed[last] += number(row, columns, EXECUTED)
        for r in reasons:
            why[last][r[len("stall_"):]] += number(row, columns, r)
    total = sum(samples.values())
    print(f"{total} stall samples; the {top} lines with the most (share, warp instructions, line, main reasons):")
    for where, count in samples.most_common(top):
        main = ", ".join(f"{r} {100 * c / count:.0f}%" for r, c in why[where].most_common(2) if c)
        print(f"  {100 * count / total:5.1f}% {executed[where]:10d}  {where:28s} {main}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv")
    parser.add_argument("--top", type=int, default=30, help="instructions with the most samples to print")
    parser.add_argument("--window", type=int, default=500, help="instructions a window of the listing")
    parser.add_argument("--range", type=int, nargs=2, metavar=("FIRST", "LAST"))
    parser.add_argument("--lines", metavar="LISTING", help="nvdisasm -c -g listing of the same code")
    args = parser.parse_args()
    body, columns, reasons = read(args.csv)
    if args.lines:
        by_line(body, columns, reasons, listing_lines(args.lines), args.top)
        return

    def main_reason(row):
        best = max(reasons, key=lambda r: number(row, columns, r))
        return best[len("stall_"):] if number(row, columns, best) else ""

    if args.range:
        for i in range(max(args.range[0], 0), min(args.range[1], len(body))):
            row = body[i]
            print(f"{i:6d} {number(row, columns, SAMPLES):6d} ex={number(row, columns, EXECUTED):8d} "
                  f"{row[columns['Source']].strip()[:70]:70s} {main_reason(row)}")
        return

    total = sum(number(row, columns, SAMPLES) for row in body)
    if total == 0:
        sys.exit("ncu_stalls: no stall samples (profile with --set full)")
    print(f"{total} stall samples over {len(body)} instructions")
    print("by reason:")
    by_reason = collections.Counter({r[len('stall_'):]: sum(number(row, columns, r) for row in body) for r in reasons})
    for reason, count in by_reason.most_common(10):
        print(f"  {reason:20s} {count:9d} {100 * count / total:5.1f}%")

    print(f"the {args.top} instructions with the most samples (index, share, executed, instruction, main reason):")
    ranked = sorted(range(len(body)), key=lambda i: -number(body[i], columns, SAMPLES))
    for i in ranked[:args.top]:
        row = body[i]
        print(f"  {i:6d} {100 * number(row, columns, SAMPLES) / total:5.2f}% ex={number(row, columns, EXECUTED):8d} "
              f"{row[columns['Source']].strip()[:60]:60s} {main_reason(row)}")

    print(f"windows of {args.window} instructions holding at least 1% (share, warp instructions, commonest opcodes):")
    for start in range(0, len(body), args.window):
        window = body[start:start + args.window]
        samples = sum(number(row, columns, SAMPLES) for row in window)
        if samples < total / 100:
            continue
        executed = sum(number(row, columns, EXECUTED) for row in window)
        ops = collections.Counter()
        for row in window:
            ops[opcode(row[columns["Source"]])] += number(row, columns, EXECUTED)
        common = " ".join(f"{op}:{count // 1000}k" for op, count in ops.most_common(5))
        print(f"  {start:6d}-{start + len(window):6d} {100 * samples / total:5.1f}% {executed / 1e6:7.2f}M  {common}")


if __name__ == "__main__":
    main()
