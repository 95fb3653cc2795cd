"""The executor from Python on a GPU with torch tensors (label gpu; skips without torch or a CUDA
GPU): one step through Step.layer for every served layer against the float64 reference, and a
torch.cuda.CUDAGraph capture of a whole step replayed with new metadata and vLLM's padding (padded
requests: slot 0 in every column, one accepted token, the query starts repeating the last real
end), bit for bit what an eager run writes; and k3-tiny's KDA layers at TP 2 over a torch.distributed
gloo group, two processes on one GPU, against the float64 reference over both ranks and bit for bit
the same on both ranks."""

import os
import tempfile
import unittest
from types import SimpleNamespace

import numpy as np

import monotile
from k3_tiny import MAX_ROWS, Q, SEED, SLOTS, K3Tiny, bf16_bits, bf16_values, random_bf16

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError:
    torch = None

REASON = ("no torch" if torch is None else None) or (None if torch.cuda.is_available() else "no CUDA GPU for torch")


def to_device(array: np.ndarray):
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if array.dtype == np.uint16:
        tensor = tensor.view(torch.bfloat16)
    return tensor.cuda()


def to_numpy(tensor) -> np.ndarray:
    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.uint16).copy()
    return tensor.numpy().copy()


class TorchMlaStandIn:
    """The host's MLA half on the GPU: the delta folded into prefix_sum in place (rounded once,
    through numpy, as the reference rounds it) and a random o_proj input."""

    def __init__(self, tiny, rng):
        self.tiny, self.rng, self.core = tiny, rng, None

    def __call__(self, layer, positions, prefix_sum, block_residual, prefix_delta):
        folded = bf16_bits(bf16_values(to_numpy(prefix_sum)) + bf16_values(to_numpy(prefix_delta)))
        prefix_sum.copy_(to_device(folded))
        self.core = to_device(random_bf16(self.rng, (prefix_sum.shape[0], self.tiny.mla_core), 1.0))
        return self.core


@unittest.skipIf(REASON is not None, REASON or "")
class TorchExecutorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tiny = K3Tiny()
        cls.weights = {layer: {name: to_device(a) for name, a in tensors.items()}
                       for layer, tensors in cls.tiny.weights.items()}

    def setUp(self):
        self.rng = np.random.default_rng(sum(self.id().encode()))

    def executor(self, start=0, end=None, **kwargs):
        backbone = self.tiny.backbone(start, end, weights=self.weights)
        return monotile.SpecializedDecode(backbone, monotile.DecodeConfig(q=Q, max_rows=MAX_ROWS),
                                          monotile.single_process_group(), log=lambda line: None, **kwargs)

    def bind(self, decode, layers=None):
        caches = self.tiny.caches(self.rng, layers)
        on_device = {layer: type(c)(conv=to_device(c.conv), state=to_device(c.state)) for layer, c in caches.items()}
        decode.prepare_kv(self.tiny.kda_caches(on_device))
        return on_device

    def step_tensors(self, requests):
        s = self.tiny.step(self.rng, requests)
        for name in ["indices", "accepted", "starts", "positions", "prefix", "blocks", "delta"]:
            setattr(s, name, to_device(getattr(s, name)))
        return s

    def plan(self, decode, caches, s, **overrides):
        arguments = dict(attn_metadata={decode.kda_prefix: self.tiny.metadata(s)},
                         kda_state=caches[self.tiny.kda_layers[0]].state)
        arguments.update(overrides)
        return decode.plan(s.positions, **arguments)

    def test_one_step_through_every_served_layer_matches_float64(self):
        stand_in = TorchMlaStandIn(self.tiny, self.rng)
        decode = self.executor(attention=stand_in)
        self.assertEqual(decode.device.dlpack_device, (2, 0))
        caches = self.bind(decode)
        s = self.step_tensors(2)
        step = self.plan(decode, caches, s)
        prefix, blocks, delta = s.prefix, s.blocks, s.delta
        checked = []
        for layer in self.tiny.served:
            kda = layer in self.tiny.kda_layers
            torch.cuda.synchronize()
            before = dict(prefix=to_numpy(prefix), delta=to_numpy(delta), blocks=to_numpy(blocks))
            if kda:
                before.update(conv=to_numpy(caches[layer].conv), state=to_numpy(caches[layer].state))
            prefix, blocks, out = step.layer(layer)(s.positions, prefix, blocks, delta)
            self.assertEqual((out.dtype, out.device.type, tuple(out.shape)),
                             (torch.bfloat16, "cuda", (s.width, self.tiny.hidden)))
            torch.cuda.synchronize()
            after = dict(prefix_after=to_numpy(prefix), blocks_after=to_numpy(blocks), out=to_numpy(out))
            if kda:
                after.update(conv_after=to_numpy(caches[layer].conv), state_after=to_numpy(caches[layer].state))
            else:
                after["core"] = to_numpy(stand_in.core)
            result = monotile.testing.check_layer(
                self.tiny.config, SEED, layer, requests=s.requests, q=Q, state_indices=to_numpy(s.indices),
                num_accepted=to_numpy(s.accepted), **before, **after)
            for output in result["outputs"]:
                self.assertTrue(output["passed"], f"layer {layer} {output}")
            checked.append(layer)
            delta = out
        self.assertEqual(checked, self.tiny.served)
        decode.after_step()
        decode.check_health()

    def test_cpu_tensors_are_refused_by_a_gpu_executor(self):
        decode = self.executor(1, 3)
        caches = self.bind(decode, [1, 2])
        s = self.step_tensors(2)
        launch = self.plan(decode, caches, s).layer(1)
        with self.assertRaises(ValueError) as raised:
            launch(s.positions, s.prefix.cpu(), s.blocks, s.delta)
        self.assertIn("layer 1 prefix_sum is on cpu, expected cuda:0 (the executor's device)", str(raised.exception))

    def test_cuda_graph_capture_and_replay_with_vllms_padding(self):
        # Two KDA layers, as the executor's own graph test: the step captured once at 2 requests.
        decode = self.executor(1, 3)
        caches = self.bind(decode, [1, 2])
        s = self.step_tensors(2)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream):
            # A warm-up step outside the capture, as vLLM runs one before capturing.
            self.plan(decode, caches, s).layer(1)(s.positions, s.prefix, s.blocks, s.delta)
            with torch.cuda.graph(graph, stream=stream):
                # plan inside the capture, as vLLM's forward calls it: the step's launches go to the
                # stream that is current when it plans (the capture's).
                step = self.plan(decode, caches, s, graph_mode=monotile.GraphMode.FULL)
                _, _, mid = step.layer(1)(s.positions, s.prefix, s.blocks, s.delta)
                _, _, out = step.layer(2)(s.positions, s.prefix, s.blocks, mid)
        torch.cuda.current_stream().wait_stream(stream)

        # One real request, one padded as vLLM pads a FULL graph's replay; new values everywhere.
        fresh = self.tiny.step(self.rng, 2)
        fresh.indices[1, :] = 0
        fresh.accepted[1] = 1
        fresh.starts[2] = fresh.starts[1]
        for name in ["indices", "accepted", "starts", "prefix", "blocks", "delta"]:
            getattr(s, name).copy_(to_device(getattr(fresh, name)))
        state = [to_numpy(t) for t in (s.prefix, s.blocks, caches[1].conv, caches[1].state, caches[2].conv,
                                       caches[2].state)]
        graph.replay()
        torch.cuda.synchronize()
        decode.check_health()
        replayed = [to_numpy(t) for t in (s.prefix, s.blocks, caches[1].conv, caches[1].state, caches[2].conv,
                                          caches[2].state, out)]

        # The same inputs eagerly, on a fresh plan.
        for tensor, values in zip((s.prefix, s.blocks, caches[1].conv, caches[1].state, caches[2].conv,
                                   caches[2].state), state):
            tensor.copy_(to_device(values))
        s.delta.copy_(to_device(fresh.delta))
        eager_step = self.plan(decode, caches, s)
        _, _, mid = eager_step.layer(1)(s.positions, s.prefix, s.blocks, s.delta)
        _, _, eager_out = eager_step.layer(2)(s.positions, s.prefix, s.blocks, mid)
        torch.cuda.synchronize()
        eager = [to_numpy(t) for t in (s.prefix, s.blocks, caches[1].conv, caches[1].state, caches[2].conv,
                                       caches[2].state, eager_out)]
        names = ["prefix", "blocks", "layer 1 conv", "layer 1 state", "layer 2 conv", "layer 2 state", "out"]
        for name, a, b in zip(names, replayed, eager):
            self.assertTrue(np.array_equal(a, b), f"{name} differs between the replay and an eager run")
        self.assertEqual(eager_out.data_ptr(), out.data_ptr(), "an eager step writes where the captured one did")
        decode.after_step()


TP_LAYERS = [1, 2]  # k3-tiny's first two layers are whole KDA layers: no host attention at TP 2


def _tp_rank(rank, world, init_file, result_dir):
    """One TP rank's process: its shards of the seeded weights and its own caches on the first GPU,
    a group over gloo, one step through layers 1 and 2; every rank's inputs and outputs gathered so
    that each checks its own against the reference over all ranks and against rank 0's bits."""
    import monotile.vllm

    torch.cuda.set_device(0)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    tiny = K3Tiny()
    weights = monotile.testing.seeded_rank_weights(tiny.config, world, rank, SEED, TP_LAYERS[0], TP_LAYERS[-1] + 1)
    on_gpu = {layer: {name: to_device(a) for name, a in tensors.items()} for layer, tensors in weights.items()}
    backbone = monotile.Backbone(tiny.config, world, rank, TP_LAYERS[0], TP_LAYERS[-1] + 1, on_gpu,
                                 layers_prefix="model.layers", experts_layout="checkpoint")
    decode = monotile.SpecializedDecode(backbone, monotile.DecodeConfig(q=Q, max_rows=MAX_ROWS),
                                        monotile.vllm.Group(dist.group.WORLD), log=lambda line: None)
    # Each rank's own caches (its heads); the step's inputs the same on every rank.
    cache_rng = np.random.default_rng(1000 + rank)
    channels = 3 * (tiny.kda_heads // world) * 128
    caches = {layer: SimpleNamespace(
        conv=to_device(random_bf16(cache_rng, (SLOTS, Q + 2, channels), 1.0)),
        state=to_device(cache_rng.normal(0.0, 0.1, size=(SLOTS, tiny.kda_heads // world, 128, 128)).astype(np.float32)))
        for layer in TP_LAYERS}
    decode.prepare_kv(K3Tiny.kda_caches(caches))
    s = tiny.step(np.random.default_rng(2026), 2)
    for name in ["indices", "accepted", "starts", "positions", "prefix", "blocks", "delta"]:
        setattr(s, name, to_device(getattr(s, name)))
    step = decode.plan(s.positions, attn_metadata={decode.kda_prefix: tiny.metadata(s)},
                       kda_state=caches[TP_LAYERS[0]].state)
    prefix, blocks, delta = s.prefix, s.blocks, s.delta
    report = []
    for layer in TP_LAYERS:
        torch.cuda.synchronize()
        before = dict(prefix=to_numpy(prefix), delta=to_numpy(delta), blocks=to_numpy(blocks))
        conv, state = to_numpy(caches[layer].conv), to_numpy(caches[layer].state)
        prefix, blocks, out = step.layer(layer)(s.positions, prefix, blocks, delta)
        torch.cuda.synchronize()
        after = dict(prefix_after=to_numpy(prefix), blocks_after=to_numpy(blocks), out=to_numpy(out))
        every = [None] * world
        dist.all_gather_object(every, dict(conv=conv, state=state, **after))
        result = monotile.testing.check_layer(
            tiny.config, SEED, layer, requests=s.requests, q=Q, state_indices=to_numpy(s.indices),
            num_accepted=to_numpy(s.accepted), **before, **after, conv_after=to_numpy(caches[layer].conv),
            state_after=to_numpy(caches[layer].state), tp=world, rank=rank,
            every_rank_conv=[e["conv"] for e in every], every_rank_state=[e["state"] for e in every])
        failed = [o for o in result["outputs"] if not o["passed"]]
        differs = [name for name in ("prefix_after", "blocks_after", "out")
                   if not np.array_equal(after[name], every[0][name])]
        report.append(f"layer {layer}: reference {'ok' if not failed else failed}; "
                      f"bits as rank 0's: {'all' if not differs else 'not ' + ', '.join(differs)}")
        delta = out
    decode.after_step()
    decode.check_health()
    with open(os.path.join(result_dir, f"rank{rank}.txt"), "w") as f:
        f.write("\n".join(report) + "\n")
    dist.barrier()
    dist.destroy_process_group()


@unittest.skipIf(REASON is not None, REASON or "")
class TorchDistributedTpTest(unittest.TestCase):
    def test_two_ranks_over_gloo_on_one_gpu_match_the_reference_and_each_other(self):
        with tempfile.TemporaryDirectory() as folder:
            mp.spawn(_tp_rank, args=(2, os.path.join(folder, "init"), folder), nprocs=2, join=True)
            for rank in range(2):
                with open(os.path.join(folder, f"rank{rank}.txt")) as f:
                    lines = f.read().splitlines()
                print(f"rank {rank}: " + " | ".join(lines))
                self.assertEqual(len(lines), len(TP_LAYERS))
                for line in lines:
                    self.assertIn("reference ok; bits as rank 0's: all", line, f"rank {rank}")


if __name__ == "__main__":
    unittest.main()
