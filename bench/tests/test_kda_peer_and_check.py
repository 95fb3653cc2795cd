"""The KDA inputs, the check's two rule sets, and fla's spec-verify path against the float64
reference (fla runs on the CPU under Triton's interpreter; skipped where fla is not installed)."""

import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from bench.kda_check import check_kda, reference_for  # noqa: E402
from bench.kda_inputs import as_numpy, clone_state, compulsory_bytes, make_kda_inputs  # noqa: E402
from bench.kda_reference import kda_verify_reference  # noqa: E402
from conftest import INTERPRETER_SKIP, interpreter_works  # noqa: E402


def _run_reference_into(inputs, state, out):
    """A stand-in implementation with our rules: the reference, rounded like a kernel would."""
    o, s = reference_for(inputs)
    out.copy_(torch.from_numpy(o).to(out.dtype))
    state.copy_(torch.from_numpy(s).to(state.dtype))


def test_inputs_follow_the_padding_convention_and_poison_write_slots():
    inputs = make_kda_inputs(3, 2, 4, padded=2, head_dim=8, slot_pad_heads=1, device="cpu", seed=1)
    assert inputs.state.stride(0) == 3 * 8 * 8  # slot stride larger than H * V * K
    assert torch.all(inputs.state_indices[3:] == 0) and torch.all(inputs.num_accepted[3:] == 1)
    used = inputs.state_indices[:3].flatten().tolist()
    assert sorted(used) == list(range(1, 13))
    for r in range(3):
        read = int(inputs.state_indices[r, inputs.num_accepted[r] - 1])
        assert torch.isfinite(inputs.state[read]).all()
        for c in range(4):
            slot = int(inputs.state_indices[r, c])
            assert slot == read or torch.isnan(inputs.state[slot]).all()
    assert inputs.query_start.tolist() == [0, 4, 8, 12, 16, 20]


def test_compulsory_bytes_counts_state_once_read_and_q_times_written():
    state = 1 * 12 * 5 * 128 * 128 * 4
    assert compulsory_bytes(1, 12, 4) == state + 5 * 4 * 12 * 128 * 2 + 4 * 12 * 2 + 12 * 4 + 12 * 128 * 4 + 4 * 4 + 4


def test_check_passes_an_implementation_with_our_rules():
    inputs = make_kda_inputs(2, 2, 4, padded=1, head_dim=8, slot_pad_heads=1, device="cpu", seed=2)
    state, out = clone_state(inputs.state), torch.full_like(inputs.v, float("nan"))
    _run_reference_into(inputs, state, out)
    result = check_kda("ours", inputs, out, state, reference_for(inputs), as_numpy(inputs.state))
    assert result.ok, result.summary()


def test_check_catches_an_unwritten_state_column():
    inputs = make_kda_inputs(2, 2, 4, head_dim=8, device="cpu", seed=3)
    state, out = clone_state(inputs.state), torch.empty_like(inputs.v)
    _run_reference_into(inputs, state, out)
    state[int(inputs.state_indices[1, 3])] = float("nan")
    result = check_kda("ours", inputs, out, state, reference_for(inputs), as_numpy(inputs.state))
    assert not result.ok and "stored states off by inf" in result.summary()


def test_check_applies_no_state_rules_to_ours_only():
    inputs = make_kda_inputs(1, 2, 4, padded=1, head_dim=8, device="cpu", seed=4)
    state, out = clone_state(inputs.state), torch.empty_like(inputs.v)
    _run_reference_into(inputs, state, out)
    out[4:] = 1.0  # the padded request's rows, as fla leaves them
    state[0] = 2.0  # slot 0 written, as fla does
    before = as_numpy(inputs.state)
    ours = check_kda("ours", inputs, out, state, reference_for(inputs), before)
    assert "padded requests' output rows are not all zero" in ours.problems
    assert "slot 0 (no state) was written" in ours.problems
    assert check_kda("fla", inputs, out, state, reference_for(inputs), before).ok


def test_check_rejects_unknown_rules():
    inputs = make_kda_inputs(1, 1, 4, head_dim=4, device="cpu")
    with pytest.raises(ValueError, match='rules must be "ours" or "fla", got "vllm"'):
        check_kda("vllm", inputs, inputs.v, inputs.state, reference_for(inputs), as_numpy(inputs.state))


def test_fla_spec_verify_matches_the_reference_on_real_requests():
    fla_kda = pytest.importorskip("bench.peers.fla_kda")
    if fla_kda.fla_version() is None:
        pytest.skip("fla is not installed")
    if not interpreter_works():
        pytest.skip(INTERPRETER_SKIP)
    inputs = make_kda_inputs(2, 2, 4, padded=1, head_dim=32, slot_pad_heads=1, device="cpu", seed=5)
    state, out = clone_state(inputs.state), torch.full_like(inputs.v, float("nan"))
    fla_kda.fla_kda_verify(inputs, state, out)
    reference = reference_for(inputs)
    result = check_kda("fla", inputs, out, state, reference, as_numpy(inputs.state))
    assert result.ok, result.summary()
    assert result.state_error < 1e-5  # fp32 state from the same bf16 inputs


def test_reference_for_uses_the_bf16_values_the_kernels_see():
    inputs = make_kda_inputs(1, 1, 4, head_dim=4, device="cpu", seed=6)
    o, _ = reference_for(inputs)
    direct, _ = kda_verify_reference(
        inputs.q.float().double().numpy(), inputs.k.double().numpy(), inputs.v.double().numpy(),
        inputs.g.double().numpy(), inputs.beta.double().numpy(), inputs.a_log.double().numpy(),
        inputs.dt_bias.double().numpy(), inputs.state.double().numpy(), inputs.state_indices.numpy(),
        inputs.num_accepted.numpy(),
    )
    np.testing.assert_array_equal(o, direct)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
