"""Compiles the Triton peers ahead of time for sm_90 (no GPU needed: Triton ships ptxas and
cuobjdump) and prints, per kernel, what the machine code does: 16-byte global loads (LDG.128 or
16-byte cp.async), matrix instructions (HGMMA = wgmma, HMMA = mma.sync), registers and local memory.

Run without TRITON_INTERPRET: `python3 bench/tests/sm90_report.py` prints one JSON object a line.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from bench.peers import triton_linear, triton_matmul, triton_rows  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
CUOBJDUMP = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
DIV16 = [["tt.divisibility", 16]]  # what Triton assumes of 16-byte-aligned pointers and sizes


def _compile(fn, signature: dict, constexprs: dict, aligned: list[int], **options):
    attrs = {(i,): DIV16 for i in aligned}
    return triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs),
                          target=TARGET, options=options)


def _stats(name: str, kernel) -> dict:
    ptx = kernel.asm["ptx"]
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(kernel.asm["cubin"])
        f.flush()
        usage = subprocess.run([CUOBJDUMP, "-res-usage", f.name], capture_output=True, text=True, check=True).stdout
        sass = subprocess.run([CUOBJDUMP, "-sass", f.name], capture_output=True, text=True, check=True).stdout
    regs = re.search(r"REG:(\d+)", usage)
    return {
        "kernel": name,
        "ldg128": len(re.findall(r"LDG\.E\.128", sass)),
        "cp_async16": len(re.findall(r"cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 0x10", ptx)),
        "hgmma": sass.count("HGMMA"),
        "hmma": sass.count("HMMA"),
        "local_loads": sass.count("LDL"),
        "registers": int(regs.group(1)) if regs else None,
    }


def linear_kernels():
    signature = {"x_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "partial_ptr": "*fp32", "count_ptr": "*i32",
                 "M": "i32", "N": "i32", "K": "i32", "k_blocks": "i32", "BLOCK_M": "constexpr",
                 "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "SPLIT_K": "constexpr", "EVEN_K": "constexpr"}
    for m, (k, n) in [(1, (7168, 6288)), (4, (3584, 768)), (64, (2304, 12288))]:
        c = triton_linear.candidate_configs(m, n, k, sm_count=132)[0]
        constexprs = {"BLOCK_M": max(16, triton.next_power_of_2(m)), "BLOCK_N": c.block_n, "BLOCK_K": c.block_k,
                      "SPLIT_K": c.split_k, "EVEN_K": True}
        kernel = _compile(triton_linear._linear_kernel, signature, constexprs, [0, 1, 2, 3, 4, 6, 7],
                          num_warps=c.num_warps, num_stages=c.num_stages)
        yield f"linear M={m} K={k} N={n} split_k={c.split_k}", kernel


def row_kernels():
    yield "rmsnorm 7168", _compile(
        triton_rows._rmsnorm_kernel,
        {"x_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "hidden": "i32", "eps": "fp32", "BLOCK": "constexpr"},
        {"BLOCK": 8192}, [0, 1, 2, 3], num_warps=8)
    yield "softmax 4096", _compile(
        triton_rows._softmax_kernel, {"x_ptr": "*bf16", "y_ptr": "*bf16", "cols": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 4096}, [0, 1, 2], num_warps=4)


def matmul_kernels():
    signature = {"a_ptr": "*bf16", "w_ptr": "*bf16", "c_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32",
                 "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr"}
    for c in triton_matmul.CANDIDATES:
        constexprs = {"BLOCK_M": c.block_m, "BLOCK_N": c.block_n, "BLOCK_K": c.block_k, "GROUP_M": c.group_m}
        kernel = _compile(triton_matmul._matmul_kernel, signature, constexprs, list(range(6)),
                          num_warps=c.num_warps, num_stages=c.num_stages)
        yield f"matmul {c.block_m}x{c.block_n}x{c.block_k} warps={c.num_warps} stages={c.num_stages}", kernel


def main() -> int:
    for group in (linear_kernels, row_kernels, matmul_kernels):
        for name, kernel in group():
            print(json.dumps(_stats(name, kernel)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
