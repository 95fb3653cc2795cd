"""Side-by-side GPU benchmarks: monotile's exported kernels against cuBLAS, Triton and fla.

Everything here runs on the GPU machine in one process (`python3 -m bench.run`); the float64 KDA
reference and the Triton kernels are also testable on a CPU (`python3 -m pytest bench/tests`).
"""
