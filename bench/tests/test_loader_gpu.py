"""The loader on a real GPU: a small kernel compiled here with nvcc to a CUBIN, exported in the
documented format, loaded through libcuda and launched eagerly and inside a torch graph capture.
Skipped without a CUDA device or nvcc (the GPU machine has both)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from bench.monotile_kernels import KernelDir  # noqa: E402

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"

# y[i] = a * x[i] + i, staged through dynamic shared memory so that the >48 KiB path is used.
SOURCE = r"""
extern "C" __global__ void scaled_iota(const __nv_bfloat16* x, float* y, float a, long long n) {
  extern __shared__ float stage[];
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  stage[threadIdx.x] = i < n ? a * __bfloat162float(x[i]) + (float)i : 0.0f;
  __syncthreads();
  if (i < n) y[i] = stage[threadIdx.x];
}
"""

needs_gpu = pytest.mark.skipif(
    not torch.cuda.is_available() or not Path(NVCC).exists(), reason="needs a CUDA device and nvcc"
)


def compile_cubin(tmp_path: Path) -> bytes:
    src = tmp_path / "scaled_iota.cu"
    src.write_text('#include <cuda_bf16.h>\n' + SOURCE)
    major, minor = torch.cuda.get_device_capability()
    out = tmp_path / "scaled_iota.cubin"
    subprocess.run([NVCC, "-cubin", f"-arch=sm_{major}{minor}", "-o", str(out), str(src)], check=True)
    return out.read_bytes()


def export(tmp_path: Path, shared_bytes: int, n: int) -> KernelDir:
    directory = tmp_path / "export"
    directory.mkdir()
    (directory / "scaled_iota.cubin").write_bytes(compile_cubin(tmp_path))
    (directory / "scaled_iota.json").write_text(json.dumps({
        "kernel": "scaled_iota",
        "block": [256, 1, 1],
        "shared_bytes": shared_bytes,
        "grid": [(n + 255) // 256, 1, 1],
        "params": [{"name": "x", "type": "ptr<bf16>"}, {"name": "y", "type": "ptr<f32>"},
                   {"name": "a", "type": "f32"}, {"name": "n", "type": "i64"}],
    }))
    return KernelDir(directory)


@needs_gpu
@pytest.mark.parametrize("shared_bytes", [1024, 64 * 1024])
def test_exported_kernel_runs_eagerly_and_in_a_graph(tmp_path, shared_bytes):
    n = 5000
    op = export(tmp_path, shared_bytes, n).load("scaled_iota")
    x = torch.randn(n, device="cuda").to(torch.bfloat16)
    y = torch.full((n,), float("nan"), device="cuda")
    expected = 3.0 * x.float() + torch.arange(n, device="cuda", dtype=torch.float32)
    op({"x": x, "y": y, "a": 3.0, "n": n})
    torch.cuda.synchronize()
    torch.testing.assert_close(y, expected)

    y.fill_(float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        op({"x": x, "y": y, "a": 3.0, "n": n})
    torch.cuda.synchronize()
    assert torch.isnan(y).all()  # capture records, it does not run
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, expected)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
