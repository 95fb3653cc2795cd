"""The executor from Python on the CPU interpreter: k3-tiny built from numpy arrays, every plan
refusal, one step through Step.layer for every served layer against the float64 reference, and the
bad inputs of a launch, prepare_kv and construction with their exception types and messages."""

import os
import unittest

import numpy as np

import monotile
from k3_tiny import MAX_ROWS, Q, SEED, SLOTS, K3Tiny, MlaStandIn, random_bf16


def case_rng(name: str) -> np.random.Generator:
    base = int(os.environ.get("MONOTILE_TEST_SEED", "20261204"), 0)
    return np.random.default_rng([base, sum(name.encode())])


class ExecutorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tiny = K3Tiny()
        cls.lines = []
        cls.decode = monotile.SpecializedDecode(
            cls.tiny.backbone(),
            monotile.DecodeConfig(q=Q, max_rows=MAX_ROWS),
            monotile.single_process_group(),
            device=monotile.cpu_device(),
            attention=None,
            log=cls.lines.append,
        )

    @classmethod
    def tearDownClass(cls):
        del cls.decode, cls.tiny

    def setUp(self):
        self.rng = case_rng(self.id())

    def bound(self, **attention):
        """A fresh executor with the caches bound (its own, so the shared one stays unbound)."""
        decode = monotile.SpecializedDecode(
            self.tiny.backbone(), monotile.DecodeConfig(q=Q, max_rows=MAX_ROWS), monotile.single_process_group(),
            log=lambda line: None, **attention)
        caches = self.tiny.caches(self.rng)
        decode.prepare_kv(self.tiny.kda_caches(caches))
        return decode, caches

    def plan(self, decode, caches, step, **overrides):
        arguments = dict(
            attn_metadata={decode.kda_prefix: self.tiny.metadata(step)},
            kda_state=caches[self.tiny.kda_layers[0]].state,
        )
        arguments.update(overrides)
        return decode.plan(step.positions, **arguments)

    def test_construction_from_numpy(self):
        stats = self.decode.stats
        self.assertEqual((stats["layers"], stats["whole_layers"], stats["ffn_layers"]), (12, 9, 3))
        self.assertEqual(stats["widths"], [2, 4])
        self.assertEqual(len(self.lines), 1)
        self.assertIn("12 layers (9 KDA, 3 MLA FFN) at widths 2,4", self.lines[0])
        self.assertEqual(self.decode.kda_prefix, "model.layers.1.self_attn")
        self.assertEqual(self.decode.config, monotile.DecodeConfig(q=Q, max_rows=MAX_ROWS))

    def test_every_plan_refusal(self):
        decode, caches = self.bound()
        step = self.tiny.step(self.rng, 2)
        self.assertIsNotNone(self.plan(decode, caches, step))
        # The seed's early returns, in its order: each alone turns an accepted step into None.
        self.assertIsNone(decode.plan(step.positions, object(), attn_metadata={}, kda_state=None), "pipeline stage")
        self.assertIsNone(self.plan(decode, caches, step, forward_context=False), "no forward context")
        self.assertIsNone(self.plan(decode, caches, step, graph_mode=monotile.GraphMode.PIECEWISE), "PIECEWISE")
        self.assertIsNotNone(self.plan(decode, caches, step, graph_mode=monotile.GraphMode.FULL), "FULL")
        self.assertIsNone(decode.plan(3, attn_metadata={decode.kda_prefix: self.tiny.metadata(step)},
                                      kda_state=caches[1].state), "a width without kernels")
        self.assertIsNone(self.plan(decode, caches, step, attn_metadata=None), "no metadata")
        self.assertIsNone(self.plan(decode, caches, step, attn_metadata={}), "not spec-verify")
        for fields, why in [({"spec_sequence_masks": False}, "not spec-verify"),
                            ({"num_prefills": 1}, "not pure decode"),
                            ({"num_decodes": 1}, "not pure decode"),
                            ({"num_spec_decodes": 0}, "not pure decode"),
                            ({"uniform_spec_sequence_length": Q + 1}, "not uniform"),
                            ({"num_spec_decodes": 1}, "not uniform")]:
            metadata = {decode.kda_prefix: self.tiny.metadata(step, **fields)}
            self.assertEqual(monotile.step_reason(metadata, decode.kda_prefix, step.width), why, fields)
            self.assertIsNone(self.plan(decode, caches, step, attn_metadata=metadata), fields)
        self.assertEqual(monotile.step_reason(None, decode.kda_prefix, step.width), "no metadata")
        # No KV bound (an executor before prepare_kv, as in vLLM's profiling run).
        self.assertIsNone(self.plan(self.decode, caches, step))
        # A cache re-bound without prepare_kv is a fault, as the seed's RuntimeError.
        moved = caches[1].state.copy()
        with self.assertRaises(RuntimeError) as raised:
            self.plan(decode, caches, step, kda_state=moved)
        self.assertIn("re-bound without prepare_kv: call prepare_kv after every KV-cache bind", str(raised.exception))

    def test_one_step_through_every_served_layer_matches_float64(self):
        self.every_served_layer(padded=False)

    def test_with_dependent_launch_every_served_layer_matches_float64(self):
        # K1 and K2 built for dependent launch: on the interpreter the two ops do nothing.
        self.every_served_layer(padded=False, dependent_launch=True)

    def test_a_request_padded_as_vllm_pads_it_matches_float64(self):
        # A FULL graph replayed with fewer requests: vLLM pads whole requests with slot 0
        # (NULL_BLOCK_ID) in every column, one accepted token, and the query starts repeating the
        # last real end. The padded rows are served like real ones; slot 0's state is never touched.
        self.every_served_layer(padded=True)

    def every_served_layer(self, padded: bool, **options):
        stand_in = MlaStandIn(self.tiny, self.rng)
        decode, caches = self.bound(attention=stand_in, **options)
        s = self.tiny.step(self.rng, 2)
        if padded:
            s.indices[1, :] = 0
            s.accepted[1] = 1
            s.starts[2] = s.starts[1]
        slot0 = {layer: (c.conv[0].copy(), c.state[0].copy()) for layer, c in caches.items()}
        step = self.plan(decode, caches, s)
        self.assertEqual(step.width, s.width)
        self.assertIsNone(step.layer(0), "layer 0 (dense MLP) is the host's")
        prefix, blocks, delta = s.prefix, s.blocks, s.delta
        checked = []
        for layer in range(1, self.tiny.config.num_hidden_layers):
            launch = step.layer(layer)
            self.assertEqual(launch is not None, layer in self.tiny.served, layer)
            if launch is None:
                continue
            kda = layer in self.tiny.kda_layers
            before = dict(prefix=prefix.copy(), delta=np.array(delta, copy=True), blocks=blocks.copy())
            if kda:
                before.update(conv=caches[layer].conv.copy(), state=caches[layer].state.copy())
            out_prefix, out_blocks, out = launch(s.positions, prefix, blocks, delta)
            self.assertIs(out_prefix, prefix, "prefix_sum is updated in place")
            self.assertIs(out_blocks, blocks, "block_residual is updated in place")
            self.assertEqual((out.dtype, out.shape), (np.uint16, (s.width, self.tiny.hidden)))
            after = dict(prefix_after=prefix, blocks_after=blocks, out=out)
            if kda:
                after.update(conv_after=caches[layer].conv, state_after=caches[layer].state)
            else:
                self.assertEqual(stand_in.calls[-1], layer)
                after["core"] = stand_in.core
            result = monotile.testing.check_layer(
                self.tiny.config, SEED, layer, requests=s.requests, q=Q, state_indices=s.indices,
                num_accepted=s.accepted, **before, **after)
            for output in result["outputs"]:
                self.assertTrue(output["passed"], f"layer {layer} {output}")
            self.assertGreaterEqual(result["clear_rows"] * 2, result["rows"], f"layer {layer}: most rows clear")
            checked.append(layer)
            delta = out
        self.assertEqual(checked, self.tiny.served)
        decode.after_step()
        decode.check_health()
        for layer, (conv, state) in slot0.items():
            self.assertTrue(np.array_equal(caches[layer].conv[0], conv), f"layer {layer}: slot 0's conv state")
            self.assertTrue(np.array_equal(caches[layer].state[0], state), f"layer {layer}: slot 0's state")

    def test_check_layer_at_tp_2_says_what_it_needs(self):
        s = self.tiny.step(self.rng, 1)
        args = dict(requests=s.requests, q=Q, state_indices=s.indices, num_accepted=s.accepted, prefix=s.prefix,
                    delta=s.delta, blocks=s.blocks, prefix_after=s.prefix, blocks_after=s.blocks, out=s.prefix)
        with self.assertRaises(ValueError) as raised:
            monotile.testing.check_layer(self.tiny.config, SEED, 3, **args, tp=2, rank=0)
        self.assertIn("check_layer: layer 3 is an MLA layer; at TP 2 only KDA layers are checked", str(raised.exception))
        caches = self.tiny.caches(self.rng, [1])
        with self.assertRaises(ValueError) as raised:
            monotile.testing.check_layer(self.tiny.config, SEED, 1, **args, tp=2, rank=1,
                                         every_rank_conv=[caches[1].conv], every_rank_state=[caches[1].state])
        self.assertIn("check_layer: every_rank_conv and every_rank_state hold 1 and 1 arrays, expected one per "
                      "rank (2)", str(raised.exception))
        with self.assertRaises(ValueError) as raised:
            monotile.testing.check_layer(self.tiny.config, SEED, 1, **args, tp=2, rank=2)
        self.assertIn("check_layer: rank 2 of TP 2, expected 0 <= rank < tp", str(raised.exception))

    def test_the_stream_comes_from_the_hosts_source(self):
        # A GPU executor's default source is torch's current stream; a given one is read by plan,
        # prepare_kv and after_step, and what it returns must be a stream of the device.
        calls = []

        def foreign():
            calls.append(1)
            return 12345

        decode = monotile.SpecializedDecode(
            self.tiny.backbone(), monotile.DecodeConfig(q=Q, max_rows=MAX_ROWS), monotile.single_process_group(),
            log=lambda line: None, stream=foreign)
        with self.assertRaises(Exception) as raised:
            decode.prepare_kv(self.tiny.kda_caches(self.tiny.caches(self.rng)))
        self.assertIn("wrap_stream", str(raised.exception))
        self.assertEqual(len(calls), 1)

        def broken():
            raise OSError("no stream")

        decode = monotile.SpecializedDecode(
            self.tiny.backbone(), monotile.DecodeConfig(q=Q, max_rows=MAX_ROWS), monotile.single_process_group(),
            log=lambda line: None, stream=broken)
        with self.assertRaises(OSError):
            decode.after_step()

    def test_launch_refuses_bad_tensors_before_enqueueing(self):
        decode, caches = self.bound(attention=MlaStandIn(self.tiny, self.rng))
        s = self.tiny.step(self.rng, 2)
        launch = self.plan(decode, caches, s).layer(1)
        h, w = self.tiny.hidden, s.width
        strided = random_bf16(self.rng, (w, 2 * h), 1.0)[:, ::2]
        buffer = np.zeros(w * h * 2 + 64, dtype=np.uint8)
        start = (-buffer.ctypes.data) % 16 + 2
        misaligned = buffer[start:start + w * h * 2].view(np.uint16).reshape(w, h)
        cases = [
            ((s.positions, strided, s.blocks, s.delta),
             f"layer 1 prefix_sum: expected BF16 [{w}, {h}] contiguous, found BF16 [{w}, {h}] strides [{2 * h}, 2]; "
             "hint: the kernels read it in place: pass a contiguous tensor"),
            ((s.positions, s.prefix.astype(np.float32), s.blocks, s.delta),
             f"layer 1 prefix_sum: expected BF16 [{w}, {h}] contiguous, found F32 [{w}, {h}]"),
            ((s.positions, s.prefix[:2], s.blocks, s.delta),
             f"layer 1 prefix_sum: expected BF16 [{w}, {h}] contiguous, found BF16 [2, {h}]"),
            ((s.positions, s.prefix, s.blocks[:, :1], s.delta),
             f"layer 1 block_residual: expected BF16 [{w}, >= {self.tiny.blocks}, {h}]"),
            ((s.positions, s.prefix, s.blocks, None), "layer 1: no pending delta; expected the previous layer's MoE output"),
            ((s.positions, misaligned, s.blocks, s.delta), "layer 1: prefix starts at byte address 0x"),
            ((s.positions, "prefix", s.blocks, s.delta),
             "layer 1 prefix_sum: expected a tensor (torch, numpy or any DLPack producer), found str"),
        ]
        before = (s.prefix.copy(), s.blocks.copy(), caches[1].state.copy())
        for arguments, message in cases:
            with self.assertRaises(ValueError, msg=message) as raised:
                launch(*arguments)
            self.assertIn(message, str(raised.exception))
        self.assertIn("not a multiple of 16", str(self._raised(launch, (s.positions, misaligned, s.blocks, s.delta))))
        for was, now in zip(before, (s.prefix, s.blocks, caches[1].state)):
            self.assertTrue(np.array_equal(was, now), "a refused launch leaves the step untouched")

    @staticmethod
    def _raised(launch, arguments):
        try:
            launch(*arguments)
        except ValueError as error:
            return error
        raise AssertionError("no ValueError")

    def test_mla_layer_without_or_with_a_bad_attention(self):
        mla = next(layer for layer in self.tiny.served if layer not in self.tiny.kda_layers)
        decode, caches = self.bound()
        s = self.tiny.step(self.rng, 2)
        launch = self.plan(decode, caches, s).layer(mla)
        with self.assertRaises(ValueError) as raised:
            launch(s.positions, s.prefix, s.blocks, s.delta)
        self.assertIn(f"layer {mla} is an MLA layer: LayerIo::attention is empty", str(raised.exception))

        decode, caches = self.bound(attention=lambda *args: np.zeros((s.width, 3), np.uint16))
        launch = self.plan(decode, caches, s).layer(mla)
        with self.assertRaises(ValueError) as raised:
            launch(s.positions, s.prefix, s.blocks, s.delta)
        self.assertIn(f"layer {mla} attention's result: expected BF16 [{s.width}, {self.tiny.mla_core}] contiguous "
                      f"(o_proj's input), found BF16 [{s.width}, 3]", str(raised.exception))

        def broken(*args):
            raise KeyError("no such module")

        decode, caches = self.bound(attention=broken)
        launch = self.plan(decode, caches, s).layer(mla)
        with self.assertRaises(RuntimeError) as raised:
            launch(s.positions, s.prefix, s.blocks, s.delta)
        self.assertIn(f"layer {mla} attention raised: KeyError: 'no such module'", str(raised.exception))

    def test_prepare_kv_refusals(self):
        decode = monotile.SpecializedDecode(
            self.tiny.backbone(), monotile.DecodeConfig(q=Q, max_rows=MAX_ROWS), monotile.single_process_group(),
            log=lambda line: None)
        caches = self.tiny.caches(self.rng)
        missing = dict(caches)
        del missing[2]
        with self.assertRaises(ValueError) as raised:
            decode.prepare_kv(self.tiny.kda_caches(missing))
        self.assertIn('prepare_kv: no cache for KDA layer "model.layers.2.self_attn"', str(raised.exception))
        bad = dict(caches)
        bad[1] = type(caches[1])(conv=caches[1].conv.astype(np.float32), state=caches[1].state)
        with self.assertRaises(ValueError) as raised:
            decode.prepare_kv(self.tiny.kda_caches(bad))
        self.assertIn("the specialized decode does not support the KV caches", str(raised.exception))
        self.assertIn("model.layers.1.self_attn", str(raised.exception))
        decode.prepare_kv([])  # nothing bound: the profiling run

    def test_construction_refuses_bad_weights_with_every_reason(self):
        weights = {layer: dict(tensors) for layer, tensors in self.tiny.weights.items()}
        weights[1]["self_attn.A_log"] = weights[1]["self_attn.A_log"].astype(np.float64)
        del weights[2]["self_attn.dt_bias"]
        third = self.tiny.kda_layers[2]
        big = np.zeros(weights[third]["self_attn.o_norm.weight"].shape + (2,), dtype=np.uint16)
        weights[third]["self_attn.o_norm.weight"] = big[:, 0]
        backbone = self.tiny.backbone(weights=weights)
        reasons = monotile.weight_reasons(backbone)
        self.assertTrue(any(r.startswith('layer 1 weight "self_attn.A_log": dtype differs') for r in reasons), reasons)
        self.assertTrue(any(r.startswith('layer 2 weight "self_attn.dt_bias"') and "missing" in r for r in reasons), reasons)
        self.assertTrue(any(r.startswith(f'layer {third} weight "self_attn.o_norm.weight"') and "strides" in r
                            for r in reasons), reasons)
        with self.assertRaises(ValueError) as raised:
            monotile.SpecializedDecode(backbone, monotile.DecodeConfig(q=Q, max_rows=MAX_ROWS),
                                       monotile.single_process_group())
        for reason in reasons:
            self.assertIn(reason, str(raised.exception))

    def test_refused_when_another_rank_refuses(self):
        class OtherRankRefuses:
            def rank(self):
                return 0

            def size(self):
                return 2

            def all_gather(self, data):
                # Rank 1's vote: a refusal ("1"; agree's votes are one byte a rank).
                return [data, b"1"]

        config = monotile.DecodeConfig(q=Q, max_rows=MAX_ROWS)
        with self.assertRaises(ValueError) as raised:
            monotile.SpecializedDecode(self.tiny.backbone(), config, OtherRankRefuses(), log=lambda line: None)
        self.assertIn("a group of 2 TP ranks (this one rank 0) for weights of TP 1 rank 0: the kernels exchange "
                      "partial sums with every rank of the group; expected the group of the weights' 1 TP ranks, "
                      "this one their rank 0", str(raised.exception))
        with self.assertRaises(ValueError) as raised:
            monotile.SpecializedDecode(self.tiny.backbone(), config, OtherRankRefuses(), log=lambda line: None,
                                       other_ranks_stood_in=True)
        self.assertIn("another TP rank refused (rank 1)", str(raised.exception))


if __name__ == "__main__":
    unittest.main()
