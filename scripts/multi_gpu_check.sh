#!/usr/bin/env bash
# TP across GPUs, one rank a GPU, on a machine of 2 or more (every step under `timeout`, 280 s in
# all): K2's exchange against NCCL's all-reduce (bench/allreduce.py, docs/bench.md), and the TP 2
# decode over MPI with a GPU a rank (Open MPI from .device-deps/mpi, scripts/device_mpi.sh).
# usage: scripts/multi_gpu_check.sh OUT BIN  (from the repository root)
# BIN: a build's monotile, monotile-jit-worker and exchange_bench, their libraries on
# LD_LIBRARY_PATH. Writes OUT/multi.txt and OUT/multi_logs.txt.
#   1. python3 -m bench.allreduce --gpus 2: exchange_bench (two forked ranks, GPU 0 and 1) beside
#      NCCL's all-reduce at [T, 7168] bf16, T 4/8/16, the ratio (goal <= 0.5)
#   2. the same at 8 GPUs where there are 8 (exchange_bench under mpirun -np 8 --mpi)
#   3. mpirun -np 2 monotile decode --mpi --tp 2 --model k3-tiny --check: a GPU a rank, ranks bit-identical
set -u
[ $# -eq 2 ] || { sed -n 's/^# usage: //p' "$0" >&2; exit 2; }
out=$1 bin=$2
mkdir -p "$out"
[ -n "${MONOTILE_JIT_WORKER:-}" ] || export MONOTILE_JIT_WORKER=$bin/monotile-jit-worker
sum=$out/multi.txt logs=$out/multi_logs.txt
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
note() { echo "[$(el) s] $*" | tee -a "$sum"; }
nvidia-smi -L 2>&1 | tee -a "$sum"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
note "checkout at $(git rev-parse --short HEAD 2>/dev/null); $gpus GPUs"
export MONOTILE_CACHE_DIR=/tmp/tp-cache
if timeout 30 bash scripts/device_mpi.sh unpack .device-deps/mpi /tmp/tp-mpi >> "$sum" 2>&1; then
  source /tmp/tp-mpi/mpi-env.sh
fi
run() {  # run NAME LIMIT COMMAND...
  local name=$1 limit=$2; shift 2
  note "$name (timeout $limit s): $*"
  timeout -k 5 "$limit" "$@" > "/tmp/tp-$name.log" 2>&1
  note "  exit $?"
  echo "===== $name: $* =====" >> "$logs"; cat "/tmp/tp-$name.log" >> "$logs"
}
run allreduce2 110 python3 -m bench.allreduce --exchange-bench "$bin/exchange_bench" --gpus 2 --json "/tmp/tp-ar2.json"
sed -n '/^== all-reduce/,$p;/^allreduce: /p' /tmp/tp-allreduce2.log >> "$sum"
if [ "$gpus" -ge 8 ]; then
  run allreduce8 110 python3 -m bench.allreduce --exchange-bench "$bin/exchange_bench" --gpus 8 --json "/tmp/tp-ar8.json"
  sed -n '/^== all-reduce/,$p;/^allreduce: /p' /tmp/tp-allreduce8.log >> "$sum"
fi
if command -v mpirun > /dev/null; then
  run decode_tp2 50 mpirun -np 2 "$bin/monotile" decode --mpi --tp 2 --model k3-tiny --device gpu --steps 2 --seed 3 --check
  grep -E "^monotile decode: |output digest|passes its check" /tmp/tp-decode_tp2.log >> "$sum"
fi
note done
# Exit 1 when a check failed (each FAIL line above says which).
grep -q "FAIL" "$sum" && exit 1
exit 0
