"""Rows and their text form: ratios, floor fractions, units, and statuses instead of numbers."""

import sys

import pytest

from bench.report import OURS, Result, Row, format_table
from bench.timing import Timing, copies_for, launches_for


def _timing(us):
    return Timing(us, us, us, launches=32, copies=2)


def _row():
    row = Row("gemv", "M=4 K=7168 N=6288", nbytes=90_000_000, flops=2 * 4 * 6288 * 7168)
    row.results[OURS] = Result(OURS, _timing(25.0), check="ok 1.0e-03")
    row.results["cublas"] = Result("cublas", _timing(30.0), check="ok 2.0e-03")
    row.results["triton"] = Result("triton", status="error: RuntimeError: boom")
    return row


def test_ratio_is_peer_over_ours_and_floor_fraction_is_floor_over_time():
    row = _row()
    assert row.ratio("cublas") == pytest.approx(1.2)
    assert row.ratio("triton") is None
    assert row.floor_us(4.5e12) == pytest.approx(20.0)
    assert row.floor_fraction(OURS, 4.5e12) == pytest.approx(0.8)


def test_text_table_shows_numbers_ratios_and_statuses():
    text = format_table("gemv", [_row()], 4.5e12)
    lines = text.splitlines()
    assert lines[0].startswith("== gemv (copy 4.500 TB/s;")
    assert lines[1].split()[:3] == ["shape", "MB", "floor"]
    assert "25.00us   80%" in lines[2] and "30.00us   67%" in lines[2] and "x1.20" in lines[2]
    assert "error: RuntimeError: boom" in lines[2]
    assert "ours ok 1.0e-03, cublas ok 2.0e-03" in lines[2]


def test_text_table_in_ms_without_floor_for_rows_without_bytes():
    row = Row("jit", "cold", 0)
    row.results["triton"] = Result("triton", _timing(1_172_000.0))
    row.results[OURS] = Result(OURS, status="by the monotile tool")
    line = format_table("jit", [row], 4e12, unit="ms").splitlines()[2]
    assert "1172.00ms" in line and "%" not in line and "by the monotile tool" in line


def test_copies_exceed_twice_the_l2_and_launches_cover_whole_rotations():
    l2 = 60_000_000
    assert copies_for(90_000_000, l2) == 2
    assert copies_for(5_500_000, l2) == 22
    assert copies_for(1_000, l2) == 1024  # capped
    assert copies_for(10 ** 10, l2) == 1
    assert launches_for(2) == 32 and launches_for(22) == 44 and launches_for(1024) == 1024
    with pytest.raises(ValueError, match="bytes_per_copy must be positive, got 0"):
        copies_for(0, l2)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
