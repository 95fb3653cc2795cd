"""Peers that are one torch call: the driver's device-to-device copy and cuBLAS products.

Each writes into a caller-owned output (out=), so that a graph capture records only the kernel,
never an allocation or a memset.
"""

from __future__ import annotations

import torch

from bench.timing import chunked_copy


def copy(src: torch.Tensor, dst: torch.Tensor) -> None:
    """Device-to-device copy (cudaMemcpyAsync for contiguous tensors of one dtype), in pieces of
    at most timing.COPY_CHUNK_BYTES: a graph records each as a memcpy node, and one node of some
    sizes (1 GiB) runs at about half speed (see COPY_CHUNK_BYTES)."""
    chunked_copy(src, dst)


def copy_one_node(src: torch.Tensor, dst: torch.Tensor) -> None:
    """The same copy as one cudaMemcpyAsync (one graph node whatever its size)."""
    dst.copy_(src)


def cublas_linear(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor) -> None:
    """y = x W^T in bf16 with f32 accumulation: x [M, K], w [N, K], y [M, N] (cuBLAS through mm)."""
    torch.mm(x, w.t(), out=y)


def reference_linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """y = x W^T in f32 from the same bf16 inputs, for checking both peers and ours."""
    return x.float() @ w.float().t()
