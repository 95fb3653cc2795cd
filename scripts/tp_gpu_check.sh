#!/usr/bin/env bash
# TP 2 across processes on a machine of one GPU (docs/gpu_check.md §6), every step under `timeout`,
# 150 s in all (the later steps only with the time left): `mpirun -np 2 monotile decode --mpi --tp 2`
# with Debian 12's Open MPI unpacked from .device-deps/mpi (scripts/device_mpi.sh), its ranks'
# outputs bit for bit the same.
# usage: scripts/tp_gpu_check.sh OUT BIN     (from the repository root)
# BIN: a build's monotile, monotile-jit-worker and exchange_bench, and executor_tp_gpu_test
# (optional, for G), with their libraries on LD_LIBRARY_PATH (docs/gpu_check.md option B).
# TP_DEVICE=cpu runs A and B on the CPU interpreter instead: a trial of the script on a machine
# without a GPU. Writes OUT/tp.txt (the steps, each check's verdict) and OUT/tp_logs.txt (every
# command's output).
#   A. mpirun -np 2 monotile decode --mpi --tp 2, k3-tiny, --check, 2 steps: every layer passes its
#      check on both ranks, the ranks' digests and --outputs bytes equal
#   B. the same with --fork (two forked processes, no MPI); its digests against A's
#   C. mpirun -np 2 ... --model k3 --tp 2 --graph --q 4 --requests 1 (K3's TP 2 shapes, weights
#      aliased on the device, each rank half the SMs): the ranks' digests equal, the step's times
#   G. executor_tp_gpu_test: the TP 2 graph test, two eager steps, replays on each one's inputs, the
#      device's epoch counting every replay
#   E. python3 -m bench.allreduce on this one GPU: it says why it skips (the NCCL comparison needs 2)
#   D. A's command again (--graph, no --check) under an MPS control daemon, if one starts; then
#      F. exchange_bench's table (per launch, chained, as a graph) under MPS, as time allows
set -u
[ $# -eq 2 ] || { sed -n 's/^# usage: //p' "$0" >&2; exit 2; }
out=$1 bin=$2
mkdir -p "$out"
[ -x "$bin/monotile" ] || { echo "tp_gpu_check: no $bin/monotile; expected BIN to hold a build's binaries" >&2; exit 2; }
[ -n "${MONOTILE_JIT_WORKER:-}" ] || export MONOTILE_JIT_WORKER=$bin/monotile-jit-worker
sum=$out/tp.txt logs=$out/tp_logs.txt
t0=$(date +%s)
budget=150
el() { echo $(( $(date +%s) - t0 )); }
left() { echo $(( budget - $(el) )); }
note() { echo "[$(el) s] $*" | tee -a "$sum"; }
section() { echo "===== $* =====" >> "$logs"; }
nvidia-smi -L 2>&1 | tee -a "$sum"
note "checkout at $(git rev-parse --short HEAD 2>/dev/null), BIN $bin: $(ls "$bin" | tr '\n' ' ')"

# The ranks' digests: one line a step from each rank, equal in order; and every check passed.
verdict() {  # verdict LOG STEPS CHECKS OUTPUTS_PREFIX
  local log=$1 steps=$2 checks=$3 outputs=$4 d0 d1 ok=1
  d0=$(sed -n "s/^  output digest (prefix, blocks, the last layer's output), TP 2 rank 0: //p" "$log")
  d1=$(sed -n "s/^  output digest (prefix, blocks, the last layer's output), TP 2 rank 1: //p" "$log")
  if [ "$(echo "$d0" | grep -c .)" -ne "$steps" ]; then note "  FAIL: $(echo "$d0" | grep -c .) digests from rank 0, expected $steps"; ok=0
  elif [ "$d0" != "$d1" ]; then note "  FAIL: the ranks' digests differ: rank 0 $(echo $d0), rank 1 $(echo $d1)"; ok=0
  else note "  ranks bit-identical: $steps digests each: $(echo $d0)"; fi
  if [ "$checks" -gt 0 ]; then
    local n; n=$(grep -c "^every served layer passes its check against the float64 reference$" "$log")
    [ "$n" -eq "$checks" ] && note "  --check: every served layer passes on both ranks" ||
      { note "  FAIL: $n of $checks ranks passed every layer's check"; grep -E " fail|FAIL" "$log" | head -5 | tee -a "$sum"; ok=0; }
  fi
  if [ -n "$outputs" ]; then
    if cmp -s "$outputs.rank0" "$outputs.rank1"; then note "  --outputs: rank 0's and rank 1's files are the same bytes ($(stat -c %s "$outputs.rank0") B)"
    else note "  FAIL: the ranks' --outputs files differ or are missing"; ok=0; fi
  fi
  [ $ok -eq 1 ] && note "  PASS" || note "  FAILED"
  echo "$d0" > "$log.digests"
}
run() {  # run NAME LIMIT COMMAND...: its output into LOG (appended to tp_logs.txt), the exit status noted
  local name=$1 limit=$2; shift 2
  note "$name (timeout $limit s): $*"
  timeout -k 5 "$limit" "$@" > "/tmp/tp-$name.log" 2>&1
  local status=$?
  note "  exit $status"
  section "$name: $*"; cat "/tmp/tp-$name.log" >> "$logs"
  grep -E "^monotile decode: |^specialized decode: |replayed|^WARNING" "/tmp/tp-$name.log" | sort -u | head -8 >> "$sum"
  return $status
}

rm -rf /tmp/tp-mpi /tmp/tp-out /tmp/tp-cache; mkdir -p /tmp/tp-out
export MONOTILE_CACHE_DIR=/tmp/tp-cache
note "unpack .device-deps/mpi"
if ! timeout 30 bash scripts/device_mpi.sh unpack .device-deps/mpi /tmp/tp-mpi >> "$sum" 2>&1; then
  note "unpack failed: no mpirun; only the --fork form runs"
else
  source /tmp/tp-mpi/mpi-env.sh
  note "mpirun: $(command -v mpirun); $(mpirun --version 2>&1 | head -1)"
fi
M=$bin/monotile
dev=${TP_DEVICE:-gpu}  # cpu: a trial of this script on a machine without a GPU (C and D left out)
tiny=(decode --tp 2 --model k3-tiny --device $dev --steps 2 --seed 3 --check)

if command -v mpirun > /dev/null; then
  run A_mpi 50 mpirun -np 2 "$M" "${tiny[@]}" --mpi --outputs /tmp/tp-out/mpi &&
    verdict /tmp/tp-A_mpi.log 2 2 /tmp/tp-out/mpi
fi
run B_fork 40 "$M" "${tiny[@]}" --fork --outputs /tmp/tp-out/fork && verdict /tmp/tp-B_fork.log 2 2 /tmp/tp-out/fork
if [ -s /tmp/tp-A_mpi.log.digests ] && [ -s /tmp/tp-B_fork.log.digests ]; then
  cmp -s /tmp/tp-A_mpi.log.digests /tmp/tp-B_fork.log.digests && note "A and B: the same digests" ||
    note "A and B: different digests (same seed and model; reported, not a failure)"
fi

if command -v mpirun > /dev/null && [ $dev = gpu ] && [ "$(left)" -gt 25 ]; then
  limit=$(( $(left) - 5 )); [ $limit -gt 55 ] && limit=55
  run C_k3 $limit mpirun -np 2 "$M" decode --mpi --tp 2 --model k3 --device gpu --graph --q 4 --requests 1 --steps 3 &&
    verdict /tmp/tp-C_k3.log 3 0 ""
  grep -E "^ +[0-9]+ +(KDA|MLA)" /tmp/tp-C_k3.log | head -6 >> "$sum"
fi

# G. the TP 2 graph test (two forked processes on this GPU): two eager steps, one capture, replays on
# each step's inputs, the device epoch counting every replay (present when BIN holds it).
if [ $dev = gpu ] && [ -x "$bin/executor_tp_gpu_test" ] && [ "$(left)" -gt 30 ]; then
  limit=$(( $(left) - 20 )); [ $limit -gt 45 ] && limit=45
  run G_graph_test $limit "$bin/executor_tp_gpu_test"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |Which is|epochs|differs" /tmp/tp-G_graph_test.log | head -6 >> "$sum"
fi

# E. the all-reduce harness on this machine of one GPU: it must say why it skips, and exit 0.
if [ $dev = gpu ] && [ "$(left)" -gt 15 ]; then
  run E_allreduce 25 python3 -m bench.allreduce --exchange-bench "$bin/exchange_bench" --iterations 5 --chain 10
  grep -E "allreduce: " /tmp/tp-E_allreduce.log | head -3 >> "$sum"
fi

mpsc=$(command -v nvidia-cuda-mps-control || true)
if command -v mpirun > /dev/null && [ $dev = gpu ] && [ -n "$mpsc" ] && [ "$(left)" -gt 25 ]; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/tp-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/tp-mps-log
  mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
  if timeout 15 "$mpsc" -d; then
    note "MPS control daemon started"
    limit=$(( $(left) - 10 )); [ $limit -gt 40 ] && limit=40
    run D_mps $limit mpirun -np 2 "$M" decode --tp 2 --model k3-tiny --device gpu --steps 3 --seed 4 --graph --mpi &&
      verdict /tmp/tp-D_mps.log 3 0 ""
    if [ -x "$bin/exchange_bench" ] && [ "$(left)" -gt 15 ]; then
      limit=$(( $(left) - 8 )); [ $limit -gt 30 ] && limit=30
      run F_exchange_mps $limit "$bin/exchange_bench" --iterations 10 --chain 20
      sed -n '/^ *T  *bytes/,/^exchange:/p' /tmp/tp-F_exchange_mps.log | head -5 >> "$sum"
    fi
    echo quit | timeout 10 "$mpsc"; sleep 1
  else
    note "MPS did not start"
  fi
  section "MPS log"; cat $CUDA_MPS_LOG_DIRECTORY/*.log >> "$logs" 2>/dev/null
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
fi
note "done"
# Exit 1 when a check failed (each FAIL line above says which).
grep -q "FAIL" "$sum" && exit 1
exit 0
