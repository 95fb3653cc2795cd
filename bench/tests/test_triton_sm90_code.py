"""The Triton peers compiled for sm_90 without a GPU (sm90_report.py, in a process without the
interpreter): each must stream with 16-byte loads, the products must use the matrix units (wgmma
for the square GEMM), and nothing may spill to local memory."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

REPORT = Path(__file__).with_name("sm90_report.py")


@pytest.fixture(scope="module")
def stats():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, str(REPORT)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return {s["kernel"]: s for s in map(json.loads, done.stdout.splitlines())}


def test_every_kernel_compiles_without_local_memory(stats):
    assert len(stats) == 3 + 2 + 3
    for name, s in stats.items():
        assert s["local_loads"] == 0, name


def test_linear_streams_w_with_16_byte_copies_into_the_matrix_units(stats):
    for name, s in stats.items():
        if name.startswith("linear"):
            assert s["cp_async16"] > 0 or s["ldg128"] > 0, s
            assert s["hgmma"] + s["hmma"] > 0, s


def test_row_kernels_use_16_byte_loads(stats):
    assert stats["rmsnorm 7168"]["ldg128"] > 0
    assert stats["softmax 4096"]["ldg128"] > 0


def test_square_gemm_uses_wgmma(stats):
    for name, s in stats.items():
        if name.startswith("matmul"):
            assert s["hgmma"] > 0, s


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
