"""monotile's host-side API from Python without an executor: the deployment check, the reasons,
step_reason, agree over Python groups, tensors crossing by DLPack with their refusals, the module's
stub, and `python -m monotile` as the tool."""

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

import monotile


def options(**fields) -> monotile.DecodeOptions:
    o = monotile.DecodeOptions()
    o.decode_backend = "latency_specialized"
    o.num_speculative_tokens = 1
    o.model = monotile.load_config("k3-tiny")
    o.device = monotile.DeviceFacts(compute_units=132)
    for name, value in fields.items():
        setattr(o, name, value)
    return o


class FakeGroup:
    """Rank `rank` of `size`; the other ranks vote `votes` (agree's one byte a rank)."""

    def __init__(self, rank, size, votes):
        self._rank, self._size, self.votes, self.calls = rank, size, votes, 0

    def rank(self):
        return self._rank

    def size(self):
        return self._size

    def all_gather(self, data):
        self.calls += 1
        out = list(self.votes)
        out.insert(self._rank, data)
        return out


class DecodeConfigTest(unittest.TestCase):
    def test_auto_is_the_stock_decode(self):
        o = monotile.DecodeOptions()
        self.assertEqual(o.decode_backend, "auto")
        self.assertIsNone(monotile.specialized_decode_config(o))

    def test_accepted_deployment(self):
        config = monotile.specialized_decode_config(options(num_speculative_tokens=2, max_rows=8))
        self.assertEqual(config, monotile.DecodeConfig(q=3, max_rows=8))
        self.assertEqual(config.widths, [3, 6])
        self.assertTrue(config.has_width(6))
        self.assertFalse(config.has_width(4))

    def test_unknown_backend(self):
        with self.assertRaises(ValueError) as raised:
            monotile.specialized_decode_config(options(decode_backend="fast"))
        self.assertEqual(str(raised.exception),
                         'unknown decode_backend "fast": expected "auto" or "latency_specialized"')

    def test_every_reason_in_one_value_error(self):
        with self.assertRaises(ValueError) as raised:
            monotile.specialized_decode_config(
                options(tensor_parallel_size=3, pipeline_parallel_size=2, num_speculative_tokens=None, model=None))
        message = str(raised.exception)
        for words in ["TP 3", "pipeline parallelism", "no speculative decoding", "no model",
                      '(decode_backend "auto" runs the stock decode)']:
            self.assertIn(words, message)

    def test_dtype_names(self):
        o = options()
        with self.assertRaises(ValueError) as raised:
            o.conv_state_dtype = "bfloat"
        self.assertIn('conv_state_dtype: unknown dtype "bfloat"', str(raised.exception))
        o.recurrent_state_dtype = "BF16"
        with self.assertRaises(ValueError) as raised:
            monotile.specialized_decode_config(o)
        self.assertIn("KDA cache dtypes", str(raised.exception))

    def test_device_facts_of_the_interpreter(self):
        facts = monotile.device_facts(monotile.cpu_device())
        self.assertTrue(facts.thread_per_program)
        self.assertIsNone(monotile.cpu_device().launches)
        self.assertEqual(monotile.launch_counting_device().launches, 0)


class HostRefusalsTest(unittest.TestCase):
    """The refusals a host can reach from Python, each a ValueError with the library's words."""

    def test_q_beyond_the_kernels(self):
        with self.assertRaises(ValueError) as raised:
            monotile.specialized_decode_config(options(num_speculative_tokens=8))
        self.assertIn("q 9 (num_speculative_tokens 8 + 1): K1 serves q up to 8; expected at most 7 speculative "
                      "tokens", str(raised.exception))

    def test_tp_above_one_without_exchanges(self):
        with self.assertRaises(ValueError) as raised:
            monotile.specialized_decode_config(options(tensor_parallel_size=8))
        self.assertIn("TP 8", str(raised.exception))

    def test_the_experts_layout_must_be_the_checkpoints(self):
        config = monotile.load_config("k3-tiny")
        weights = monotile.testing.seeded_rank_weights(config, 1, 0, 5, 0, config.num_hidden_layers)
        for layout, words in [("", 'experts_layout is not declared: expected "checkpoint"'),
                              ("aiter_shuffled", 'experts_layout "aiter_shuffled" is not read by the kernels: '
                                                 'expected "checkpoint"')]:
            backbone = monotile.Backbone(config, 1, 0, 0, config.num_hidden_layers, weights, experts_layout=layout)
            reasons = monotile.weight_reasons(backbone)
            self.assertEqual(len(reasons), 1, reasons)
            self.assertIn(words, reasons[0])
            with self.assertRaises(ValueError) as raised:
                monotile.SpecializedDecode(backbone, monotile.DecodeConfig(q=2, max_rows=8),
                                           monotile.single_process_group(), log=lambda line: None)
            self.assertIn(words, str(raised.exception))
        backbone = monotile.Backbone(config, 1, 0, 0, config.num_hidden_layers, weights, experts_layout="checkpoint")
        self.assertEqual(monotile.weight_reasons(backbone), [])

    def test_a_layers_prefix_ending_in_a_dot(self):
        config = monotile.load_config("k3-tiny")
        weights = monotile.testing.seeded_rank_weights(config, 1, 0, 5, 0, config.num_hidden_layers)
        backbone = monotile.Backbone(config, 1, 0, 0, config.num_hidden_layers, weights,
                                     layers_prefix="model.layers.", experts_layout="checkpoint")
        reasons = monotile.weight_reasons(backbone)
        self.assertEqual(len(reasons), 1, reasons)
        self.assertIn('"model.layers."', reasons[0])


class ReasonsTest(unittest.TestCase):
    def test_no_weights_every_reason(self):
        config = monotile.load_config("k3-tiny")
        reasons = monotile.weight_reasons(monotile.Backbone(config, 1, 0, 0, 13, {}, experts_layout="checkpoint"))
        self.assertTrue(reasons)
        self.assertTrue(all(r.startswith("layer ") for r in reasons), reasons[:3])
        self.assertTrue(any("missing" in r for r in reasons), reasons[:3])

    def test_no_served_layer(self):
        config = monotile.load_config("k3-tiny")
        reasons = monotile.weight_reasons(monotile.Backbone(config, 1, 0, 0, 1, {}))
        self.assertTrue(any("no served layer" in r for r in reasons), reasons)

    def test_cache_reasons(self):
        config = monotile.load_config("k3-tiny")
        channels = 3 * config.kda_num_heads * config.kda_head_dim
        conv = np.zeros((3, 4, channels), dtype=np.float32)
        state = np.zeros((3, config.kda_num_heads, 128, 128), dtype=np.float32)
        reasons = monotile.cache_reasons([monotile.KdaCache("model.layers.1.self_attn", conv, state)], config, 1, 0, 2)
        self.assertEqual(len(reasons), 1, reasons)
        self.assertIn("model.layers.1.self_attn", reasons[0])
        self.assertIn("BF16", reasons[0])
        good = np.zeros((3, 4, channels), dtype=np.uint16)
        self.assertEqual(monotile.cache_reasons([monotile.KdaCache("l", good, state)], config, 1, 0, 2), [])

    def test_step_reason_needs_spec_metadata(self):
        with self.assertRaises(ValueError) as raised:
            monotile.step_reason({"model.layers.1.self_attn": object()}, "model.layers.1.self_attn", 2)
        self.assertIn('attn_metadata["model.layers.1.self_attn"]: expected a monotile.SpecMetadata, found object',
                      str(raised.exception))
        with self.assertRaises(ValueError):
            monotile.step_reason([], "model.layers.1.self_attn", 2)


class AgreeTest(unittest.TestCase):
    def test_single_process(self):
        group = monotile.single_process_group()
        self.assertEqual((group.rank(), group.size()), (0, 1))
        self.assertEqual(group.all_gather(b"abc"), [b"abc"])
        monotile.agree([], group, "the weights")
        with self.assertRaises(ValueError) as raised:
            monotile.agree(["a", "b"], group, "the weights")
        self.assertEqual(str(raised.exception),
                         'the specialized decode does not support the weights: a; b (decode_backend "auto" runs the '
                         'stock decode)')

    def test_another_rank_refused(self):
        group = FakeGroup(0, 3, [b"0", b"1"])
        with self.assertRaises(ValueError) as raised:
            monotile.agree([], group, "the KV caches")
        self.assertIn("another TP rank refused (rank 2)", str(raised.exception))
        self.assertEqual(group.calls, 1)
        monotile.agree([], FakeGroup(1, 2, [b"0"]), "the KV caches")

    def test_group_faults(self):
        class Raises(FakeGroup):
            def all_gather(self, data):
                raise ConnectionError("peer gone")

        with self.assertRaises(RuntimeError) as raised:
            monotile.agree([], Raises(0, 2, []), "the weights")
        self.assertIn("TP ranks could not agree on the weights: all_gather of a", str(raised.exception))
        self.assertIn("raised: ConnectionError: peer gone", str(raised.exception))
        with self.assertRaises(RuntimeError) as raised:
            monotile.agree([], FakeGroup(0, 3, [b"0"]), "the weights")
        self.assertIn("2 entries, expected the group's size 3", str(raised.exception))
        with self.assertRaises(ValueError) as raised:
            monotile.agree([], object(), "the weights")
        self.assertIn("group: a object has no rank()", str(raised.exception))
        with self.assertRaises(ValueError) as raised:
            monotile.agree([], FakeGroup(2, 2, []), "the weights")
        self.assertIn("group: rank 2 of size 2: expected 0 <= rank < size", str(raised.exception))


class TensorTest(unittest.TestCase):
    def test_views_are_zero_copy_and_keep_their_owner(self):
        config = monotile.load_config("k3-tiny")
        weights = monotile.testing.seeded_rank_weights(config, 1, 0, 5, 1, 2)
        self.assertEqual(list(weights), [1])
        a_log = weights[1]["self_attn.A_log"]
        self.assertEqual(a_log.dtype, np.float32)
        backbone = monotile.Backbone(config, 1, 0, 1, 2, weights)
        self.assertEqual(backbone.tensor_count, len(weights[1]))
        del weights
        reasons = monotile.weight_reasons(backbone)
        self.assertFalse(any(r.startswith("layer 1 ") for r in reasons), reasons)

    def test_unsupported_objects_and_dtypes(self):
        config = monotile.load_config("k3-tiny")
        with self.assertRaises(ValueError) as raised:
            monotile.Backbone(config, 1, 0, 1, 2, {1: {"self_attn.A_log": [1.0, 2.0]}})
        self.assertEqual(str(raised.exception), 'layer 1 weight "self_attn.A_log": expected a tensor (torch, numpy or '
                                                'any DLPack producer), found list')
        class RequiresGrad:
            requires_grad = True

        with self.assertRaises(ValueError) as raised:
            monotile.Backbone(config, 1, 0, 1, 2, {1: {"w": RequiresGrad()}})
        self.assertIn("found python_api_test.RequiresGrad; hint: a tensor that requires grad cannot cross DLPack: pass "
                      "tensor.detach()", str(raised.exception))
        with self.assertRaises(ValueError) as raised:
            monotile.Backbone(config, 1, 0, 1, 2, {1: {"x": np.zeros(2, dtype=np.complex64)}})
        self.assertIn('layer 1 weight "x": DLPack dtype (code 5, 64 bits, 1 lanes) has no monotile counterpart',
                      str(raised.exception))


class ModuleTest(unittest.TestCase):
    def test_stub_describes_the_module(self):
        stub = Path(monotile.__file__).with_name("_monotile.pyi")
        self.assertTrue(stub.exists(), stub)
        text = stub.read_text()
        for words in ["class SpecializedDecode", "def plan(self, positions: object", "class Step",
                      "def __call__(self, positions: object, prefix_sum: object", "def specialized_decode_config("]:
            self.assertIn(words, text)

    def test_python_m_monotile_is_the_tool(self):
        ours = subprocess.run([sys.executable, "-m", "monotile", "--help"], capture_output=True, text=True, check=True)
        self.assertIn("usage: monotile <command>", ours.stdout)
        self.assertIn("warmup", ours.stdout)
        tool = os.environ.get("MONOTILE_TOOL_BINARY")
        if tool:
            theirs = subprocess.run([tool, "--help"], capture_output=True, text=True, check=True)
            self.assertEqual(ours.stdout, theirs.stdout)
        bad = subprocess.run([sys.executable, "-m", "monotile", "no-such-command"], capture_output=True, text=True)
        self.assertEqual(bad.returncode, 2)
        self.assertIn('monotile: unknown command "no-such-command"', bad.stderr)

    def test_python_m_monotile_compiles_through_the_tools_worker(self):
        # The tool finds its compile worker relative to its own path, which python -m monotile
        # must hand it; where NVRTC is missing the only complaint may be NVRTC.
        with tempfile.TemporaryDirectory() as cache:
            result = subprocess.run([sys.executable, "-m", "monotile", "compile", "rmsnorm_rows4_h7168", "--target",
                                     "sm_90a"], capture_output=True, text=True, cwd=cache,
                                    env={**os.environ, "MONOTILE_CACHE_DIR": cache})
        output = result.stdout + result.stderr
        self.assertNotIn("worker", output)
        if result.returncode != 0:
            self.assertIn("nvrtc", output.lower())
        else:
            self.assertIn("1 compiled", output)

    def test_python_m_monotile_warmup_runs_the_tools_warmup(self):
        result = subprocess.run([sys.executable, "-m", "monotile", "warmup", "--target", "no_such_target"],
                                capture_output=True, text=True)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("no_such_target", result.stderr + result.stdout)


if __name__ == "__main__":
    unittest.main()
