"""The KDA half's report without torch: the bytes, k1_bench's --json file and the table.
Runs under pytest or as a plain script (python3 bench/tests/test_kda_half_report.py)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.kda_half_report import (HalfLine, K1JsonError, OursRun, format_half_table, half_bytes,  # noqa: E402
                                   k1_bytes, load_k1_json, parse_k1_json)


def _doc(shapes=None, **top):
    doc = {"gpu": True, "device": "NVIDIA H200", "programs": 132, "iterations": 50,
           "copy_bandwidth_bytes_per_s": 4.2e12}
    doc.update(top)
    doc["shapes"] = shapes if shapes is not None else [_shape(1, 4, 20.0), _shape(2, 2, 22.0)]
    return doc


def _shape(n, q, half_us):
    return {"name": f"k3_k1_h7168_nh12_t{n * q}_q{q}_nb1_d1_sl{q + 2}_w-1", "N": n, "q": q, "T": n * q,
            "gemv": "wa_bn32_w2_bk128_s1", "k1_bytes": k1_bytes(n, q), "bytes": half_bytes(n, q),
            "k1_median_us": half_us - 6.0, "k1_best_us": half_us - 6.5, "k1_floor_us": 22.6,
            "half_median_us": half_us, "half_best_us": half_us - 0.5, "floor_us": half_us / 1.1}


def test_bytes_follow_the_layer():
    # N = 1, q = 4: in_proj 90.14 MB, f_b, conv weights, norms, dt_bias; prefix (with the delta) and
    # the block; conv window; one state read and four written (0.75 MiB each); core.
    weights = 6288 * 7168 * 2 + 1536 * 128 * 2 + 3 * 1536 * 16 + 3 * 7168 * 2 + 2 * 1536 * 4
    activations = 4 * 7168 * 2 * 3 + 4 * 7168 * 2 + 3 * 1536 * 9 * 2 + 4 * 1536 * 2
    state = 12 * 128 * 128 * 4 * 5
    assert k1_bytes(1, 4) == weights + activations + state
    assert half_bytes(1, 4) - k1_bytes(1, 4) == 7168 * 1536 * 2 + 4 * 1536 * 2 + 4 * 7168 * 2
    # Within 2.5 MB of the stock path's compulsory bytes in anchors.md (117.6 / 122.5 / 132.3 MB at q = 4),
    # which also counts some of its own intermediates (more of them as T grows).
    for n, stock_mb in ((1, 117.6), (2, 122.5), (4, 132.3)):
        assert 0 < stock_mb - half_bytes(n, 4) / 1e6 < 2.5
    assert half_bytes(4, 2) < half_bytes(4, 4)


def test_parse_reads_every_shape():
    run = parse_k1_json(json.dumps(_doc()))
    assert run.gpu and run.device == "NVIDIA H200" and run.copy_bandwidth == 4.2e12
    assert sorted(run.shapes) == [(1, 4), (2, 2)]
    shape = run.shapes[(1, 4)]
    assert shape.half_median_us == 20.0 and shape.k1_median_us == 14.0 and shape.nbytes == half_bytes(1, 4)
    assert shape.gemv == "wa_bn32_w2_bk128_s1"


def test_integers_pass_as_floats_and_bools_are_refused():
    doc = _doc([dict(_shape(1, 4, 20.0), half_median_us=20)])
    assert parse_k1_json(json.dumps(doc)).shapes[(1, 4)].half_median_us == 20.0
    bad = _doc([dict(_shape(1, 4, 20.0), N=True)])
    try:
        parse_k1_json(json.dumps(bad), "f.json")
    except K1JsonError as err:
        assert str(err) == 'f.json: shapes[0]: "N" is bool, expected int'
    else:
        raise AssertionError("a bool N was accepted")


def test_without_a_gpu_the_reason_is_kept():
    run = parse_k1_json('{"gpu": false, "reason": "no GPU: no NVIDIA driver", "shapes": []}')
    assert not run.gpu and run.reason == "no GPU: no NVIDIA driver" and run.shapes == {}


def test_malformed_files_name_what_is_wrong():
    cases = [
        ("not json", "k1 json: not JSON"),
        ("[]", "k1 json: expected an object, got list"),
        ('{"shapes": []}', 'k1 json: no "gpu"'),
        (json.dumps(_doc([{"name": "x"}])), 'k1 json: shapes[0]: no "N"'),
        (json.dumps({k: v for k, v in _doc().items() if k != "copy_bandwidth_bytes_per_s"}),
         'k1 json: no "copy_bandwidth_bytes_per_s"'),
    ]
    for text, message in cases:
        try:
            parse_k1_json(text)
        except K1JsonError as err:
            assert str(err).startswith(message), (text, str(err))
        else:
            raise AssertionError(f"accepted: {text}")


def test_load_reads_a_file(tmp_path=None):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "k1.json"
        path.write_text(json.dumps(_doc()))
        assert load_k1_json(path).shapes[(2, 2)].half_median_us == 22.0


def _lines():
    return [HalfLine(1, 4, half_bytes(1, 4), 28.0, 50.0, check="ok rec o 1.0e-03", stock_us=30.0, stock_status="ok",
                     stock_check="ok attn_res 4.2e-03"),
            HalfLine(2, 2, half_bytes(2, 2), 28.5, None, unfused_status="fla not installed",
                     stock_status="could not run: StockImportError: .peers/vllm_stock absent"),
            HalfLine(4, 4, half_bytes(4, 4), 31.5, 60.0, stock_us=40.0, stock_status="ok")]


def test_table_with_ours():
    text = format_half_table(_lines(), 4.2e12, parse_k1_json(json.dumps(_doc())))
    lines = text.splitlines()
    assert lines[0] == ("== KDA half (K1 + o_proj), K3 TP8 rank 0, layer 1 (copy 4.200 TB/s; goals: stock/ours >= 1.3, "
                        "unfused/ours >= 1.65, ours/floor <= 1.3)")
    assert "ours: k1_bench on NVIDIA H200, its copy 4.200 TB/s" in lines[1]
    assert "the cuBLAS form is timed at every T" in lines[2]
    header = lines[3].split()
    assert header[:8] == ["shape", "MB", "floor", "us", "stock", "us", "stock/floor", "unfused"]
    first = lines[4].split()
    # N=1 q=4: stock 30.00 (1.071 of the floor 28.00), unfused 50.00, ours 20.00 (1.100 of its own floor),
    # stock/ours 1.50, unfused/ours 2.50, K1 14.00.
    assert first[:3] == ["N=1", "q=4", "T=4"]
    assert first[3:13] == [f"{half_bytes(1, 4) / 1e6:.2f}", "28.00", "30.00", "1.071", "50.00", "20.00", "1.100",
                           "1.50", "2.50", "14.00"]
    second = lines[5]
    # No stock and no unfused time: their reasons, cut; ours still shown.
    assert "could not run: StockImportError: .pee..." in second and "fla not installed" in second
    assert "22.00" in second
    third = lines[6].split()
    # ours has no N=4 q=4 shape in this file: dashes where a ratio needs it.
    assert third[4:10] == ["31.50", "40.00", "1.270", "60.00", "-", "-"]
    assert lines[7:] == ["   check N=1 q=4 stock: ok attn_res 4.2e-03", "   check N=1 q=4 unfused: ok rec o 1.0e-03"]


def test_table_without_ours_prints_the_peers():
    text = format_half_table(_lines(), 4.2e12, None)
    assert "ours: not measured (no --k1-json)" in text
    assert "50.00" in text and "30.00" in text
    no_gpu = format_half_table(_lines(), 4.2e12, OursRun(False, "no GPU: x", "", 0.0, {}))
    assert "ours: k1_bench ran without a GPU (no GPU: x)" in no_gpu


if __name__ == "__main__":
    tests = [value for name, value in sorted(globals().items()) if name.startswith("test_")]
    for test in tests:
        test()
    print(f"{len(tests)} tests passed")
