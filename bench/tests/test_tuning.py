"""The tiny tuner: fastest candidate wins, failing candidates are skipped, quick takes the first."""

import sys

import pytest

triton_testing = pytest.importorskip("triton.testing")

from bench.peers.tuning import pick_fastest  # noqa: E402


@pytest.fixture
def fake_bench(monkeypatch):
    monkeypatch.setattr(triton_testing, "do_bench", lambda fn, **kwargs: fn())


def _runner(times):
    def run_with(candidate):
        def run():
            if times[candidate] is None:
                raise RuntimeError("out of resources: shared memory")
            return times[candidate]
        return run
    return run_with


def test_fastest_candidate_wins(fake_bench):
    assert pick_fastest(["a", "b", "c"], _runner({"a": 3.0, "b": 1.0, "c": 2.0}), quick=False) == "b"


def test_failing_candidates_are_skipped(fake_bench):
    assert pick_fastest(["a", "b"], _runner({"a": None, "b": 5.0}), quick=False) == "b"


def test_all_failing_is_an_error_naming_each(fake_bench):
    with pytest.raises(RuntimeError, match="every candidate config failed: a: RuntimeError: out of resources"):
        pick_fastest(["a", "b"], _runner({"a": None, "b": None}), quick=False)


def test_quick_takes_the_heuristic_choice_without_timing():
    assert pick_fastest(["a", "b"], lambda c: pytest.fail("timed in quick mode"), quick=True) == "a"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
