"""The float64 KDA reference against a scalar per-token loop written independently (K-first state,
math-module scalars), plus the properties the spec fixes: slot <= 0, column t, read-before-write."""

import math
import sys

import numpy as np
import pytest

from bench.kda_reference import kda_verify_reference, l2normalize


def _random_step(rng, n=3, heads=2, q=4, dim=5, slots=None):
    t = n * q
    slots = slots or 1 + n * q
    indices = (rng.permutation(n * q) + 1).reshape(n, q).astype(np.int32)
    return dict(
        q=rng.standard_normal((t, heads, dim)), k=rng.standard_normal((t, heads, dim)),
        v=rng.standard_normal((t, heads, dim)), g=rng.standard_normal((t, heads, dim)),
        beta=rng.standard_normal((t, heads)), a_log=0.5 * rng.standard_normal(heads),
        dt_bias=0.5 * rng.standard_normal(heads * dim),
        state=0.3 * rng.standard_normal((slots, heads, dim, dim)),
        state_indices=indices, num_accepted=rng.integers(1, q + 1, n).astype(np.int32),
    )


def _scalar_loop(a):
    """Token by token, head by head, element by element, with the state stored K-first."""
    n, q = a["state_indices"].shape
    t_all, heads, dim = a["q"].shape
    out = [[[0.0] * dim for _ in range(heads)] for _ in range(t_all)]
    after = a["state"].copy()
    sig = lambda x: 1.0 / (1.0 + math.exp(-x))  # noqa: E731
    for r in range(n):
        first = int(a["state_indices"][r, a["num_accepted"][r] - 1])
        if first <= 0:
            continue
        for h in range(heads):
            s = [[float(a["state"][first, h, vi, ki]) for vi in range(dim)] for ki in range(dim)]  # s[k][v]
            for t in range(q):
                row = r * q + t
                qv, kv = list(a["q"][row, h]), list(a["k"][row, h])
                qn = math.sqrt(sum(x * x for x in qv) + 1e-6)
                kn = math.sqrt(sum(x * x for x in kv) + 1e-6)
                qv = [x / qn / math.sqrt(dim) for x in qv]
                kv = [x / kn for x in kv]
                for ki in range(dim):
                    u = a["g"][row, h, ki] + a["dt_bias"][h * dim + ki]
                    decay = math.exp(-5.0 * sig(math.exp(a["a_log"][h]) * u))
                    for vi in range(dim):
                        s[ki][vi] *= decay
                b = sig(a["beta"][row, h])
                for vi in range(dim):
                    pred = sum(s[ki][vi] * kv[ki] for ki in range(dim))
                    err = (a["v"][row, h, vi] - pred) * b
                    for ki in range(dim):
                        s[ki][vi] += err * kv[ki]
                for vi in range(dim):
                    out[row][h][vi] = sum(s[ki][vi] * qv[ki] for ki in range(dim))
                slot = int(a["state_indices"][r, t])
                if slot > 0:
                    for vi in range(dim):
                        for ki in range(dim):
                            after[slot, h, vi, ki] = s[ki][vi]
    return np.array(out), after


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_scalar_loop(seed):
    a = _random_step(np.random.default_rng(seed))
    o, s = kda_verify_reference(**a)
    o2, s2 = _scalar_loop(a)
    np.testing.assert_allclose(o, o2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s, s2, rtol=1e-12, atol=1e-12)


def test_padded_request_gives_zero_rows_and_stores_nothing():
    rng = np.random.default_rng(3)
    a = _random_step(rng, n=3)
    a["state_indices"][1, :] = 0
    a["num_accepted"][1] = 1
    o, s = kda_verify_reference(**a)
    assert np.all(o[4:8] == 0.0)
    np.testing.assert_array_equal(s[0], a["state"][0])
    assert np.any(o[0:4] != 0.0) and np.any(o[8:12] != 0.0)


def test_negative_read_slot_means_no_state_even_if_later_columns_are_valid():
    a = _random_step(np.random.default_rng(4), n=1)
    a["num_accepted"][0] = 2
    a["state_indices"][0, 1] = -1
    o, s = kda_verify_reference(**a)
    assert np.all(o == 0.0)
    np.testing.assert_array_equal(s, a["state"])


def test_slot_zero_in_a_later_column_skips_only_that_store():
    a = _random_step(np.random.default_rng(5), n=1)
    a["num_accepted"][0] = 1
    skipped = int(a["state_indices"][0, 2])
    a["state_indices"][0, 2] = 0
    o, s = kda_verify_reference(**a)
    np.testing.assert_array_equal(s[skipped], a["state"][skipped])
    np.testing.assert_array_equal(s[0], a["state"][0])
    assert np.any(s[int(a["state_indices"][0, 3])] != a["state"][int(a["state_indices"][0, 3])])


def test_column_t_holds_the_state_after_token_t():
    """Continuing from column a-1 with a accepted equals re-running the first a tokens."""
    rng = np.random.default_rng(6)
    a = _random_step(rng, n=1, q=4)
    a["num_accepted"][0] = 1
    _, after = kda_verify_reference(**a)
    for accepted in range(1, 5):
        partial = {k: v.copy() for k, v in a.items()}
        for key in ("q", "k", "v", "g", "beta"):
            partial[key] = a[key][:accepted]
        partial["state_indices"] = a["state_indices"][:, :accepted]
        partial["num_accepted"] = np.array([1], np.int32)
        _, short = kda_verify_reference(**partial)
        slot = int(a["state_indices"][0, accepted - 1])
        np.testing.assert_allclose(after[slot], short[slot], rtol=1e-13)


def test_reading_a_slot_that_the_step_also_writes_uses_the_old_state():
    a = _random_step(np.random.default_rng(7), n=1)
    a["num_accepted"][0] = 3
    read = int(a["state_indices"][0, 2])
    o, _ = kda_verify_reference(**a)
    fresh = {k: v.copy() for k, v in a.items()}
    fresh["state"] = np.concatenate([a["state"], a["state"][read:read + 1]])
    fresh["state_indices"][0, 2] = a["state"].shape[0]  # the old state, in a slot nothing else writes
    o2, _ = kda_verify_reference(**fresh)
    np.testing.assert_allclose(o, o2, rtol=1e-13)


def test_one_token_from_zero_state_has_a_closed_form():
    """S = beta v k^T, so o = beta v (k . q) with l2-normalized k and scaled, normalized q."""
    rng = np.random.default_rng(8)
    a = _random_step(rng, n=1, q=1, heads=1, dim=6)
    a["state"][:] = 0.0
    o, s = kda_verify_reference(**a)
    k = l2normalize(a["k"][0, 0])
    q = l2normalize(a["q"][0, 0]) / math.sqrt(6)
    b = 1.0 / (1.0 + math.exp(-a["beta"][0, 0]))
    np.testing.assert_allclose(o[0, 0], b * a["v"][0, 0] * np.dot(k, q), rtol=1e-12)
    np.testing.assert_allclose(s[int(a["state_indices"][0, 0]), 0], b * np.outer(a["v"][0, 0], k), rtol=1e-12)


def test_rejects_wrong_token_count_and_accepted_range():
    a = _random_step(np.random.default_rng(9), n=2)
    bad = dict(a, q=a["q"][:-1])
    with pytest.raises(ValueError, match="T = 7 tokens, expected N \\* q = 2 \\* 4"):
        kda_verify_reference(**bad)
    a["num_accepted"][1] = 5
    with pytest.raises(ValueError, match=r"num_accepted\[1\] = 5, expected 1..4"):
        kda_verify_reference(**a)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
