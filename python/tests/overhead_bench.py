"""The Python cost of a step on K3 (TP 8, rank 0 alone, q 4, 4 requests: width 16), on the
launch-counting device (launches counted, not run; weights and KV states are arrays nobody reads):

- plan + step.layer(i) for every decoder layer: what the binding adds to the seed's per-step
  decisions (goal: <= 50 us a step);
- plan + step.layer(i) and its launch for every layer: the host's whole work of enqueueing a step
  from Python (the tensors' DLPack imports and checks, the executor's argument packing), less the
  driver's launch calls. The MLA layers' host half is a stand-in returning a fixed array.

    PYTHONPATH=build/python python3 python/tests/overhead_bench.py [--steps N]
"""

import argparse
import statistics
import time

import numpy as np

import monotile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--model", default="k3")
    args = parser.parse_args()

    config = monotile.load_config(args.model)
    tp, q, requests = (8, 4, 4) if args.model == "k3" else (1, 2, 2)
    width = requests * q
    device = monotile.launch_counting_device()
    start = time.perf_counter()
    weights = monotile.testing.placeholder_rank_weights(config, tp, 0)
    backbone = monotile.Backbone(config, tp, 0, 0, config.num_hidden_layers, weights, experts_layout="checkpoint")
    core = np.zeros((width, config.num_attention_heads // tp * config.v_head_dim), np.uint16)
    decode = monotile.SpecializedDecode(backbone, monotile.DecodeConfig(q=q, max_rows=16), monotile.single_process_group(),
                                        device=device, attention=lambda *args: core, log=print,
                                        other_ranks_stood_in=tp > 1)
    print(f"construction: {time.perf_counter() - start:.1f} s")

    heads = config.kda_num_heads // tp
    channels = 3 * heads * config.kda_head_dim
    kda_layers = [i for i in range(config.num_hidden_layers) if config.served_kind(i) == "whole"]
    caches = [monotile.KdaCache(decode.attention_name(i), monotile.testing.placeholder("BF16", [64, q + 2, channels]),
                                monotile.testing.placeholder("F32", [64, heads, 128, 128])) for i in kda_layers]
    decode.prepare_kv(caches)
    kda_state = caches[0].recurrent

    metadata = {decode.kda_prefix: monotile.SpecMetadata(
        spec_sequence_masks=True, num_spec_decodes=requests, uniform_spec_sequence_length=q,
        spec_state_indices=np.arange(width, dtype=np.int32).reshape(requests, q),
        num_accepted_tokens=np.full(requests, q, np.int32),
        spec_query_start_loc=np.arange(requests + 1, dtype=np.int32) * q)}
    positions = np.arange(width, dtype=np.int64)
    hidden = config.hidden_size
    prefix = np.zeros((width, hidden), np.uint16)
    blocks = np.zeros((width, config.block_count(), hidden), np.uint16)
    first_delta = np.zeros((width, hidden), np.uint16)
    layers = range(config.num_hidden_layers)

    def decide() -> int:
        s = decode.plan(positions, None, attn_metadata=metadata, kda_state=kda_state)
        return sum(s.layer(i) is not None for i in layers)

    def step() -> int:
        s = decode.plan(positions, None, attn_metadata=metadata, kda_state=kda_state)
        prefix_sum, block_residual, delta = prefix, blocks, first_delta
        served = 0
        for i in layers:
            launch = s.layer(i)
            if launch is not None:
                prefix_sum, block_residual, delta = launch(positions, prefix_sum, block_residual, delta)
                served += 1
        return served

    def timed(body) -> tuple[list[float], list[float]]:
        """Wall and this process's CPU time a step, us, per run: on a shared machine the CPU time
        leaves out the time the process waited for a core."""
        wall, cpu = [], []
        for _ in range(5):
            start, cpu_start = time.perf_counter(), time.process_time()
            for _ in range(args.steps):
                body()
            wall.append((time.perf_counter() - start) / args.steps * 1e6)
            cpu.append((time.process_time() - cpu_start) / args.steps * 1e6)
        return wall, cpu

    served = step()
    launches = device.launches
    step()
    per_step = device.launches - launches
    print(f"{args.model} TP {tp} rank 0, width {width}: {config.num_hidden_layers} layers, {served} served, "
          f"{per_step} launches a step (counted, not run); 5 runs of {args.steps} steps, us a step:")
    for what, body in [("plan + step.layer(i) for every layer (goal <= 50 us)", decide),
                       ("plan + step.layer(i) and its launch for every layer", step)]:
        wall, cpu = timed(body)
        print(f"  {what}: wall best {min(wall):.1f}, median {statistics.median(wall):.1f}; "
              f"CPU best {min(cpu):.1f}, median {statistics.median(cpu):.1f}")


if __name__ == "__main__":
    main()
