"""Triton peers for the row-wise kernels: fused RMSNorm and softmax, one program per row.

A whole row sits in registers (hidden 7168 -> a 8192-wide block, masked), so each row is read once
and written once; math in f32, one rounding to bf16 at the store.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

RMS_EPS = 1e-6


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    ok = cols < hidden
    x = tl.load(x_ptr + row * hidden + cols, mask=ok, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / hidden + eps)
    w = tl.load(w_ptr + cols, mask=ok, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * hidden + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=ok)


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    ok = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=ok, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))  # masked lanes: exp(-inf) = 0
    tl.store(y_ptr + row * cols + offs, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=ok)


def _warps(block: int) -> int:
    return min(16, max(4, block // 1024))  # ~32 elements per thread, 16-byte loads


def rmsnorm(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor, eps: float = RMS_EPS) -> None:
    """y[r] = x[r] * rsqrt(mean(x[r]^2) + eps) * w, x and y [rows, hidden] bf16, w [hidden]."""
    rows, hidden = x.shape
    block = triton.next_power_of_2(hidden)
    _rmsnorm_kernel[(rows,)](x, w, y, hidden, eps, BLOCK=block, num_warps=_warps(block))


def softmax(x: torch.Tensor, y: torch.Tensor) -> None:
    """y[r] = softmax(x[r]) over the last axis, x and y [rows, cols] bf16."""
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    _softmax_kernel[(rows,)](x, y, cols, BLOCK=block, num_warps=_warps(block))


def rmsnorm_reference(x: torch.Tensor, w: torch.Tensor, eps: float = RMS_EPS) -> torch.Tensor:
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps) * w.float()


def softmax_reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), dim=-1)
