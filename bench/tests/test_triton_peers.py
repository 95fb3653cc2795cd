"""The Triton peers under Triton's CPU interpreter, on small odd shapes, against torch in f32.

The interpreter computes tl.dot on bf16 operands wrongly (numpy has no bf16), so the dot-based
kernels (linear, matmul) are checked with fp16 here: the kernels take their dtype from the tensors.
"""

import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from bench.peers import triton_linear, triton_matmul, triton_rows  # noqa: E402
from conftest import INTERPRETER_SKIP, interpreter_works  # noqa: E402

pytestmark = pytest.mark.skipif(not interpreter_works(), reason=INTERPRETER_SKIP)


def _rel(actual, expected):
    return ((actual.float() - expected).norm() / expected.norm()).item()


@pytest.mark.parametrize(
    "m,n,k,config",
    [
        (1, 48, 128, triton_linear.LinearConfig(16, 32, 1, 4, 2)),  # one split, K even
        (3, 40, 96, triton_linear.LinearConfig(16, 32, 3, 4, 2)),  # three splits, N ragged
        (20, 33, 80, triton_linear.LinearConfig(16, 16, 2, 4, 2)),  # K not a multiple of the splits
    ],
)
def test_linear_matches_torch_and_resets_its_counters(m, n, k, config):
    torch.manual_seed(m * 1000 + n)
    x = torch.randn(m, k).half()
    w = torch.randn(n, k).half()
    y = torch.full((m, n), float("nan")).half()
    linear = triton_linear.TritonLinear(m, n, k, "cpu", config)
    for _ in range(2):  # the second launch relies on the counters the first one reset
        y.fill_(float("nan"))
        linear(x, w, y)
        assert _rel(y, x.float() @ w.float().t()) < 1e-3
        assert torch.all(linear.counters == 0)


def test_linear_candidates_split_k_only_when_row_blocks_are_few():
    few_rows = triton_linear.candidate_configs(4, 768, 3584, sm_count=132)[0]
    many_rows = triton_linear.candidate_configs(4, 12288, 2304, sm_count=132)[0]
    assert few_rows.split_k > 1
    assert many_rows.split_k == 1
    for config in triton_linear.candidate_configs(64, 6288, 7168, sm_count=132):
        assert config.block_k * 2 % 16 == 0  # whole 16-byte vectors along K


def test_rmsnorm_matches_torch():
    x = torch.randn(5, 300).bfloat16()
    w = torch.randn(300).bfloat16()
    y = torch.full_like(x, float("nan"))
    triton_rows.rmsnorm(x, w, y)
    assert _rel(y, triton_rows.rmsnorm_reference(x, w)) < 1e-2


def test_softmax_matches_torch_on_ragged_rows():
    x = (4 * torch.randn(6, 100)).bfloat16()
    y = torch.full_like(x, float("nan"))
    triton_rows.softmax(x, y)
    assert _rel(y, triton_rows.softmax_reference(x)) < 1e-2
    assert torch.allclose(y.float().sum(dim=1), torch.ones(6), atol=2e-2)


def test_matmul_matches_torch_with_ragged_tiles():
    a = torch.randn(40, 64).half()
    w = torch.randn(50, 64).half()
    c = torch.full((40, 50), float("nan")).half()
    triton_matmul.matmul(a, w, c, triton_matmul.MatmulConfig(16, 32, 16, 2, 4, 2))
    assert _rel(c, a.float() @ w.float().t()) < 1e-3


def test_matmul_rejects_k_not_a_multiple_of_block_k():
    a, w, c = torch.zeros(16, 40).half(), torch.zeros(16, 40).half(), torch.zeros(16, 16).half()
    with pytest.raises(ValueError, match="K = 40 must be a multiple of BLOCK_K = 64"):
        triton_matmul.matmul(a, w, c)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
