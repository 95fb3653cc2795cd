"""Triton peer for decode GEMV / small-M GEMM, y = x W^T (bf16 in and out, f32 accumulation).

Same algorithm class as monotile's kernel: each program streams a block of BLOCK_N rows of W with
16-byte loads along K and multiplies on the matrix units (M padded to 16). When there are too few
row blocks to fill the GPU, K is split: each split stores f32 partials, and the last program to
arrive on a row block (an acq_rel counter) sums them, writes y and resets the counter, so one launch
does it all and graph replays need no memset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from bench.peers.tuning import pick_fastest


@triton.jit
def _linear_kernel(
    x_ptr, w_ptr, y_ptr, partial_ptr, count_ptr, M, N, K, k_blocks,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    block_n = tl.program_id(0)
    split = tl.program_id(1)
    rows = block_n * BLOCK_N + tl.arange(0, BLOCK_N)  # rows of W: columns of y
    ms = tl.arange(0, BLOCK_M)
    row_ok = rows < N
    m_ok = ms < M
    # Each split covers `k_blocks` whole K blocks; EVEN_K means K == k_blocks * SPLIT_K * BLOCK_K,
    # so no K mask is needed and the loads stay 16 bytes wide.
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, k_blocks):
        kk = (split * k_blocks + i) * BLOCK_K + ks
        if EVEN_K:
            w = tl.load(w_ptr + rows[:, None] * K + kk[None, :], mask=row_ok[:, None], other=0.0)
            x = tl.load(x_ptr + ms[:, None] * K + kk[None, :], mask=m_ok[:, None], other=0.0)
        else:
            k_ok = kk < K
            w = tl.load(w_ptr + rows[:, None] * K + kk[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            x = tl.load(x_ptr + ms[:, None] * K + kk[None, :], mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        acc = tl.dot(x, tl.trans(w), acc)
    out = ms[:, None] * N + rows[None, :]
    out_ok = m_ok[:, None] & row_ok[None, :]
    if SPLIT_K == 1:
        tl.store(y_ptr + out, acc.to(y_ptr.dtype.element_ty), mask=out_ok)
    else:
        tl.store(partial_ptr + split * M * N + out, acc, mask=out_ok)
        tl.debug_barrier()  # every thread's partial is stored before the release below
        arrived = tl.atomic_add(count_ptr + block_n, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT_K - 1:
            total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for s in tl.static_range(SPLIT_K):
                total += tl.load(partial_ptr + s * M * N + out, mask=out_ok, other=0.0, cache_modifier=".cg")
            tl.store(y_ptr + out, total.to(y_ptr.dtype.element_ty), mask=out_ok)
            tl.atomic_xchg(count_ptr + block_n, 0, sem="relaxed", scope="gpu")  # ready for the next launch


@dataclass(frozen=True)
class LinearConfig:
    block_n: int
    block_k: int
    split_k: int
    num_warps: int
    num_stages: int


def _block_m(m: int) -> int:
    return max(16, triton.next_power_of_2(m))  # the matrix unit's minimum M is 16


def _split_for(m: int, n: int, k: int, block_n: int, block_k: int, sm_count: int) -> int:
    """Smallest split of K that gives at least two programs per SM, keeping >= 2 K blocks each."""
    blocks = math.ceil(n / block_n)
    k_blocks = math.ceil(k / block_k)
    split = 1
    while blocks * split < 2 * sm_count and k_blocks // (split * 2) >= 2:
        split *= 2
    return split


def candidate_configs(m: int, n: int, k: int, sm_count: int) -> list[LinearConfig]:
    """A few configs, the heuristic's choice first. Shared memory per stage stays under ~48 KB."""
    if m <= 16:
        shapes = [(16, 256, 4), (32, 256, 4), (32, 128, 4)]
    elif m <= 32:
        shapes = [(32, 128, 4), (32, 256, 4), (64, 128, 4)]
    else:
        shapes = [(64, 128, 3), (32, 128, 4), (64, 64, 4)]
    configs = []
    for block_n, block_k, stages in shapes:
        split = _split_for(m, n, k, block_n, block_k, sm_count)
        warps = 4 if block_n * block_k <= 32 * 128 else 8
        configs.append(LinearConfig(block_n, block_k, split, warps, stages))
    return configs


class TritonLinear:
    """y = x W^T for one (M, N, K); owns the split-K workspace of the config it picked."""

    def __init__(self, m: int, n: int, k: int, device: str | torch.device, config: LinearConfig):
        self.m, self.n, self.k, self.config = m, n, k, config
        c = config
        self.partials = torch.empty((max(1, c.split_k) * m * n,), dtype=torch.float32, device=device)
        self.counters = torch.zeros((triton.cdiv(n, c.block_n),), dtype=torch.int32, device=device)
        self.grid = (triton.cdiv(n, c.block_n), c.split_k)
        self.k_blocks = triton.cdiv(triton.cdiv(k, c.block_k), c.split_k)
        self.even_k = k == self.k_blocks * c.split_k * c.block_k

    def __call__(self, x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> None:
        c = self.config
        _linear_kernel[self.grid](
            x, w, y, self.partials, self.counters, self.m, self.n, self.k, self.k_blocks,
            BLOCK_M=_block_m(self.m), BLOCK_N=c.block_n, BLOCK_K=c.block_k, SPLIT_K=c.split_k,
            EVEN_K=self.even_k, num_warps=c.num_warps, num_stages=c.num_stages,
        )


def tuned_linear(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor, quick: bool = False) -> TritonLinear:
    """Picks the fastest candidate config on these inputs (the heuristic's choice when quick)."""
    m, k = x.shape
    n = w.shape[0]
    sm_count = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 132
    candidates = [TritonLinear(m, n, k, x.device, c) for c in candidate_configs(m, n, k, sm_count)]
    return pick_fastest(candidates, lambda lin: (lambda: lin(x, w, y)), quick)
