#!/usr/bin/env python3
"""Instruction counts of the loops in an NVIDIA SASS listing: how a kernel's inner loops change when
its DSL source or its lowering changes, measured without a GPU.

A loop is a backward branch to a label; its body is every instruction from the label to the branch.
Each loop prints as: first line, last line, instructions, and the most common opcodes. Nested loops
print too (the outer loop counts the inner one's body once).

Make the listing from a build's PTX (`MONOTILE_JIT_DUMP_DIR` writes it), with ptxas from the CUDA
toolkit and nvdisasm (the toolkit's, or the `nvidia-cuda-nvdisasm` wheel's):

    MONOTILE_JIT_DUMP_DIR=/tmp/d build/tools/monotile compile k3_k2_tp8_t4 --target sm_90a
    ptxas -arch=sm_90a /tmp/d/k3_k2_tp8_t4-sm_90a.ptx -o /tmp/k2.cubin
    nvdisasm -c /tmp/k2.cubin > /tmp/k2.sass
    scripts/sass_loops.py /tmp/k2.sass [--with HMMA] [--top 12]

--with OPCODE keeps only the loops that hold that opcode (HMMA: the matrix unit's loops).
"""

import argparse
import collections
import re
import sys

LABEL = re.compile(r"^(\.L_x_\d+):")
BRANCH = re.compile(r"\bBRA\s+`?\(?(\.L_x_\d+)")
INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")


def loops(lines):
    """(first line, last line, Counter of opcodes) for each backward branch, in listing order."""
    labels = {}
    for number, line in enumerate(lines):
        match = LABEL.match(line)
        if match:
            labels[match.group(1)] = number
    for number, line in enumerate(lines):
        match = BRANCH.search(line)
        if not match or labels.get(match.group(1), number) >= number:
            continue
        start = labels[match.group(1)]
        opcodes = collections.Counter()
        for body_line in lines[start:number + 1]:
            op = INSTRUCTION.search(body_line)
            if op:
                opcodes[op.group(1)] += 1
        yield start + 1, number + 1, opcodes


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("listing", help="nvdisasm -c output")
    parser.add_argument("--with", dest="opcode", help="only loops holding this opcode (e.g. HMMA)")
    parser.add_argument("--top", type=int, default=12, help="opcodes shown per loop")
    args = parser.parse_args(argv)
    try:
        with open(args.listing, encoding="utf-8") as listing:
            lines = listing.read().split("\n")
    except OSError as error:
        print(f"sass_loops: cannot read {args.listing}: {error.strerror}", file=sys.stderr)
        return 2
    found = 0
    for first, last, opcodes in loops(lines):
        if args.opcode and opcodes[args.opcode] == 0:
            continue
        found += 1
        common = " ".join(f"{op} {count}" for op, count in opcodes.most_common(args.top))
        print(f"lines {first}-{last}: {sum(opcodes.values())} instructions: {common}")
    if found == 0:
        print("sass_loops: no loop found" + (f" holding {args.opcode}" if args.opcode else ""), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
