"""Triton peer for the square bf16 GEMM, C = A W^T (A [M, K], W [N, K], C [M, N], f32 accumulation).

Output tiles are visited in groups of GROUP_M tile rows so that the W tiles a group shares are still
in L2; the K loop is software-pipelined by Triton (num_stages) and lowered to wgmma on sm_90.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from bench.peers.tuning import pick_fastest


@triton.jit
def _matmul_kernel(
    a_ptr, w_ptr, c_ptr, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group

    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_ok = rm < M
    n_ok = rn < N
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    w_ptrs = w_ptr + rn[None, :] * K + rk[:, None]  # a [BLOCK_K, BLOCK_N] view of W^T
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):  # K % BLOCK_K == 0 (checked by the caller)
        a = tl.load(a_ptrs, mask=m_ok[:, None], other=0.0)
        w = tl.load(w_ptrs, mask=n_ok[None, :], other=0.0)
        acc = tl.dot(a, w, acc)
        a_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


@dataclass(frozen=True)
class MatmulConfig:
    block_m: int
    block_n: int
    block_k: int
    group_m: int
    num_warps: int
    num_stages: int


# Hopper-friendly tiles: 128x128x64 with 3-4 stages, and a wider N tile for 8 warps.
CANDIDATES = (
    MatmulConfig(128, 128, 64, 8, 8, 3),
    MatmulConfig(128, 256, 64, 8, 8, 3),
    MatmulConfig(128, 128, 64, 8, 4, 4),
)


def matmul(a: torch.Tensor, w: torch.Tensor, c: torch.Tensor, config: MatmulConfig = CANDIDATES[0]) -> None:
    m, k = a.shape
    n = w.shape[0]
    if k % config.block_k:
        raise ValueError(f"triton matmul: K = {k} must be a multiple of BLOCK_K = {config.block_k}")
    grid = (triton.cdiv(m, config.block_m) * triton.cdiv(n, config.block_n),)
    _matmul_kernel[grid](
        a, w, c, m, n, k,
        BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k, GROUP_M=config.group_m,
        num_warps=config.num_warps, num_stages=config.num_stages,
    )


def tuned_matmul_config(a: torch.Tensor, w: torch.Tensor, c: torch.Tensor, quick: bool = False) -> MatmulConfig:
    return pick_fastest(CANDIDATES, lambda cfg: (lambda: matmul(a, w, c, cfg)), quick)
