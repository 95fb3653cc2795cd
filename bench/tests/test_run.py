"""The command line: kernel listing, argument checks before any GPU work."""

import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from bench import run  # noqa: E402


def test_list_kernels_names_every_export_the_tables_look_for(capsys):
    assert run.main(["--list-kernels"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 + 24 + 6 + 1 + 15
    assert any(line.startswith("gemv  gemv_m64_k2304_n12288: x (ptr<bf16> [M, K])") for line in lines)
    assert any(line.startswith("kda   kda_verify_h96_n16_q4: q, k, v, g") for line in lines)
    assert any(line.startswith("rows  softmax_rows8192_cols4096: x, y") for line in lines)


def test_unknown_table_is_refused(capsys):
    assert run.main(["--tables", "copy,gemv2"]) == 2
    assert "unknown tables ['gemv2']; expected a subset of ['copy', 'gemv', 'rows', 'gemm', 'kda', 'jit', 'kda_half', 'moe']" in capsys.readouterr().err


def test_missing_export_directory_is_refused(tmp_path, capsys):
    assert run.main(["--ours", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: not a directory; expected the exported kernels" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_without_a_gpu_the_run_says_so(capsys):
    assert run.main(["--tables", "copy"]) == 2
    assert "no CUDA device; the benchmarks need the GPU machine" in capsys.readouterr().err


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
