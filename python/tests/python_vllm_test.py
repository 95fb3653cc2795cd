"""monotile.vllm with stand-ins for vLLM's objects (nothing imports vLLM): the parameter names and
layouts, the GDN metadata and forward-context fields, the hooks of examples/vllm_model_state.py,
and the Group over a torch.distributed gloo group where torch is installed."""

import os
import subprocess
import sys
import unittest
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import monotile
import monotile.vllm
from k3_tiny import Q, K3Tiny

SOURCE = Path(os.environ.get("MONOTILE_SOURCE_DIR", Path(__file__).resolve().parents[2]))


class Module:
    """A torch module's named_parameters() as vLLM names them."""

    def __init__(self, tiny: K3Tiny, prefix: str):
        self.tiny, self.prefix = tiny, prefix
        self.model = SimpleNamespace(start_layer=0, end_layer=tiny.config.num_hidden_layers)

    def named_parameters(self):
        yield f"{self.prefix}embed_tokens.weight", np.zeros((4, 4), np.uint16)
        for layer, tensors in self.tiny.weights.items():
            for name, tensor in tensors.items():
                name = name.replace("block_sparse_moe.experts.", "block_sparse_moe.experts.routed_experts.")
                yield f"{self.prefix}layers.{layer}.{name}", tensor
        # An MTP layer past num_hidden_layers is never the executor's.
        yield f"{self.prefix}layers.{self.tiny.config.num_hidden_layers}.mlp_res_norm.weight", np.zeros(4, np.uint16)


class VllmNamesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tiny = K3Tiny()

    def test_parameter_names(self):
        self.assertEqual(monotile.vllm.parameter_name("block_sparse_moe.experts.routed_experts.w13_weight"),
                         "block_sparse_moe.experts.w13_weight")
        self.assertEqual(monotile.vllm.parameter_name("block_sparse_moe.experts.routed_experts.w2_weight_packed"),
                         "block_sparse_moe.experts.w2_weight")
        self.assertEqual(monotile.vllm.parameter_name("block_sparse_moe.shared_experts.down_proj.weight"),
                         "block_sparse_moe.shared_experts.down_proj.weight")

    def test_backbone_from_named_parameters_of_either_prefix(self):
        for prefix in ["model.", "language_model.model."]:
            backbone = monotile.vllm.backbone(Module(self.tiny, prefix), self.tiny.config, tp=1, rank=0,
                                              experts_layout="checkpoint")
            self.assertEqual((backbone.start_layer, backbone.end_layer), (0, self.tiny.config.num_hidden_layers))
            self.assertEqual(monotile.weight_reasons(backbone), [], prefix)
            self.assertEqual(backbone.layers_prefix, prefix + "layers")

    def test_backbone_keeps_a_relaid_tensor_as_it_is(self):
        module = Module(self.tiny, "model.")
        original = module.named_parameters

        def strided():
            for name, tensor in original():
                if name == "model.layers.1.self_attn.o_norm.weight":
                    tensor = np.repeat(tensor, 2)[::2]
                yield name, tensor

        module.named_parameters = strided
        reasons = monotile.weight_reasons(
            monotile.vllm.backbone(module, self.tiny.config, tp=1, rank=0, experts_layout="checkpoint"))
        self.assertEqual(len(reasons), 1, reasons)
        self.assertTrue(reasons[0].startswith('layer 1 weight "self_attn.o_norm.weight"'), reasons)


def vllm_config(**changes):
    """A VllmConfig's attributes as the seed's check reads them, for a served deployment."""
    config = SimpleNamespace(
        additional_config={"decode_backend": "latency_specialized"},
        parallel_config=SimpleNamespace(tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1,
                                        enable_expert_parallel=False, enable_eplb=False,
                                        decode_context_parallel_size=1, prefill_context_parallel_size=1,
                                        use_ubatching=False),
        lora_config=None, kv_transfer_config=None, aux_output_config=None, weight_transfer_config=None,
        model_config=SimpleNamespace(enable_sleep_mode=False),
        offload_config=SimpleNamespace(uva=SimpleNamespace(cpu_offload_gb=0),
                                       prefetch=SimpleNamespace(offload_group_size=0)),
        speculative_config=SimpleNamespace(num_speculative_tokens=1, enable_adaptive_verification=False,
                                           uses_dynamic_speculative_decoding=lambda: False),
        cache_config=SimpleNamespace(use_replayssm=False, use_kda_recoverssm=False),
        use_v2_model_runner=True,
        compilation_config=SimpleNamespace(mode=SimpleNamespace(name="VLLM_COMPILE"),
                                           cudagraph_mode=SimpleNamespace(name="FULL_AND_PIECEWISE")),
    )
    for path, value in changes.items():
        *parents, name = path.split("__")
        target = config
        for parent in parents:
            target = getattr(target, parent)
        setattr(target, name, value)
    return config


class VllmConfigTest(unittest.TestCase):
    def options(self, **changes):
        return monotile.vllm.decode_options(vllm_config(**changes), model=monotile.load_config("k3-tiny"),
                                            device=monotile.device_facts(monotile.cpu_device()))

    def test_served_deployment(self):
        self.assertEqual(monotile.specialized_decode_config(self.options()), monotile.DecodeConfig(q=2, max_rows=16))
        self.assertEqual(monotile.deployment_warnings(self.options()), [])

    def test_stock_without_the_switch(self):
        self.assertIsNone(monotile.specialized_decode_config(self.options(additional_config=None)))

    def test_every_setting_read_by_name_and_refused_with_the_seeds_words(self):
        with self.assertRaises(ValueError) as raised:
            monotile.specialized_decode_config(self.options(
                parallel_config__data_parallel_size=2, lora_config=object(),
                speculative_config__uses_dynamic_speculative_decoding=lambda: True,
                compilation_config__mode=SimpleNamespace(name="STOCK_TORCH_COMPILE")))
        message = str(raised.exception)
        for words in ["data parallelism (data_parallel_size 2): expected 1",
                      "LoRA (lora_config): the kernels apply no adapters", "torch.compile"]:
            self.assertIn(words, message)

    def test_piecewise_only_graphs_warn(self):
        options = self.options(compilation_config__cudagraph_mode=SimpleNamespace(name="PIECEWISE"))
        self.assertIsNotNone(monotile.specialized_decode_config(options))
        warnings = monotile.deployment_warnings(options)
        self.assertEqual(len(warnings), 1)
        self.assertIn("PIECEWISE-only CUDA graphs capture every decode step as stock", warnings[0])
        with self.assertRaises(ValueError) as raised:
            self.options(compilation_config__cudagraph_mode=SimpleNamespace(name="SOMETIMES"))
        self.assertIn("compilation_config.cudagraph_mode 'SOMETIMES': expected one of NONE, PIECEWISE",
                      str(raised.exception))


class VllmMetadataTest(unittest.TestCase):
    def metadata(self, **fields):
        values = dict(num_prefills=0, num_decodes=0, num_spec_decodes=2, spec_sequence_masks=np.ones(2, bool),
                      uniform_spec_sequence_length=Q, spec_state_indices_tensor=np.arange(4, dtype=np.int32).reshape(2, 2),
                      num_accepted_tokens=np.ones(2, np.int32), spec_query_start_loc=np.array([0, 2, 4], np.int32),
                      num_actual_tokens=4)
        values.update(fields)
        return SimpleNamespace(**values)

    def test_spec_metadata_by_attribute_name(self):
        m = monotile.vllm.spec_metadata(self.metadata())
        self.assertTrue(m.spec_sequence_masks)
        self.assertEqual((m.num_prefills, m.num_decodes, m.num_spec_decodes, m.uniform_spec_sequence_length),
                         (0, 0, 2, Q))
        self.assertEqual(monotile.step_reason({"a": m}, "a", 4), None)
        self.assertEqual(monotile.step_reason({"a": m}, "a", 6), "not uniform")
        plain = monotile.vllm.spec_metadata(self.metadata(spec_sequence_masks=None, spec_state_indices_tensor=None))
        self.assertFalse(plain.spec_sequence_masks)
        self.assertEqual(monotile.step_reason({"a": plain}, "a", 4), "not spec-verify")

    def test_plan_arguments_from_the_forward_context(self):
        self.assertEqual(monotile.vllm.plan_arguments("a", None, None), {"forward_context": False, "kda_state": None})
        context = SimpleNamespace(attn_metadata={"a": self.metadata(), "b": object()},
                                  cudagraph_runtime_mode=SimpleNamespace(name="PIECEWISE"))
        arguments = monotile.vllm.plan_arguments("a", context, None)
        self.assertEqual(arguments["graph_mode"], monotile.GraphMode.PIECEWISE)
        self.assertEqual(list(arguments["attn_metadata"]), ["a"])
        self.assertIsNone(monotile.step_reason(arguments["attn_metadata"], "a", 4))
        dual_batch = SimpleNamespace(attn_metadata=[{}, {}], cudagraph_runtime_mode=None)
        arguments = monotile.vllm.plan_arguments("a", dual_batch, None)
        self.assertIsNone(arguments["attn_metadata"])
        self.assertEqual(arguments["graph_mode"], monotile.GraphMode.NONE)
        with self.assertRaises(ValueError) as raised:
            monotile.vllm.graph_mode(SimpleNamespace(name="FULL_AND_PIECEWISE"))
        self.assertIn("cudagraph_runtime_mode 'FULL_AND_PIECEWISE': expected NONE, PIECEWISE or FULL",
                      str(raised.exception))


class ExampleTest(unittest.TestCase):
    def test_example_places_every_hook(self):
        result = subprocess.run([sys.executable, str(SOURCE / "examples" / "vllm_model_state.py")],
                                capture_output=True, text=True, timeout=600)
        self.assertEqual(result.returncode, 0, result.stderr)
        out = result.stdout
        print(out)
        for words in ["__init__: specialized_decode_config -> DecodeConfig(q=2, max_rows=8)",
                      "specialized decode: 12 layers (9 KDA, 3 MLA FFN) at widths 2,4,6,8",
                      "model state: built after load, routing on 'model.layers.1.self_attn'",
                      "initialize_kv_cache (memory profiling): prepare_kv bound nothing",
                      "initialize_kv_cache: prepare_kv bound 9 KDA layers' caches",
                      "step 1 (prefill, 2 requests, width 4): plan None: every layer the host's",
                      "step 2 (spec-verify, 2 requests, width 4): kernels for layers 1-12 (12), the host's for the rest",
                      "step 3 (spec-verify, 2 requests, width 4): kernels for layers 1-12 (12)"]:
            self.assertIn(words, out)


def _agree_rank(rank: int, store: str, queue) -> None:
    """One process of a TP 2 gloo group: rank 1 refuses; both must get the same verdict."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    try:
        group = monotile.vllm.Group(dist.group.WORLD)
        try:
            monotile.agree(["rank 1's own reason"] if rank == 1 else [], group, "the weights")
            queue.put((rank, "accepted"))
        except ValueError as error:
            queue.put((rank, str(error)))
    finally:
        dist.destroy_process_group()


class TorchGroupTest(unittest.TestCase):
    def test_two_processes_agree_over_gloo(self):
        try:
            import torch.multiprocessing as mp
        except ImportError:
            self.skipTest("no torch: the Group over torch.distributed needs it")
        import tempfile

        context = mp.get_context("spawn")
        queue = context.Queue()
        with tempfile.TemporaryDirectory() as folder:
            store = f"{folder}/store"
            processes = [context.Process(target=_agree_rank, args=(rank, store, queue)) for rank in range(2)]
            for p in processes:
                p.start()
            verdicts = dict(queue.get(timeout=120) for _ in processes)
            for p in processes:
                p.join(timeout=60)
        self.assertIn("another TP rank refused (rank 1)", verdicts[0])
        self.assertIn("rank 1's own reason", verdicts[1])

    def test_group_over_a_gloo_group(self):
        try:
            import torch.distributed as dist
        except ImportError:
            self.skipTest("no torch: the Group over torch.distributed needs it")
        import tempfile

        with tempfile.NamedTemporaryFile() as store:
            dist.init_process_group("gloo", init_method=f"file://{store.name}", rank=0, world_size=1)
            try:
                group = monotile.vllm.Group(dist.group.WORLD)
                self.assertEqual((group.rank(), group.size()), (0, 1))
                self.assertEqual(group.all_gather(b"\x00\x01"), [b"\x00\x01"])
                monotile.agree([], group, "the weights")
                with self.assertRaises(ValueError):
                    monotile.agree(["x"], group, "the weights")
            finally:
                dist.destroy_process_group()


if __name__ == "__main__":
    unittest.main()
