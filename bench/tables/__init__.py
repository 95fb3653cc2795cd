"""One module per benchmark table; each has `run(ctx) -> list[Row]` and `KERNELS`, the names and
parameters our exported kernels must have for it (see docs/bench.md)."""
