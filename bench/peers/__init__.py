"""The peers monotile's kernels are compared with: torch's copy and cuBLAS, Triton kernels written
here (same algorithm class as ours), and fla's fused_recurrent_kda."""
