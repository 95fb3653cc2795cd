#!/usr/bin/env bash
# `mpirun -np 2 monotile decode --mpi` at k3-tiny on the CPU interpreter: one rank a process, each
# says which rank of MPI's world it is and that the other rank's partial sums are stood in, and both
# finish their steps. Exit 77 (skipped) without mpirun.
# usage: decode_command_mpi_test.sh MONOTILE mpi|none (none: the build has no MPI)
set -uo pipefail
if [ "${2:-mpi}" = none ]; then
  echo "skipped: built without MPI; hint: scripts/install-deps.sh installs libopenmpi-dev, then configure again"
  exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
out=$(bash "$here/../tests/mpirun_two.sh" "$1" decode --mpi --device cpu --steps 1 --seed 3 2>&1)
status=$?
echo "$out"
[ $status -eq 77 ] && exit 77
[ $status -eq 0 ] || { echo "FAILED: mpirun exited $status"; exit 1; }
for rank in 0 1; do
  for want in "monotile decode: k3-tiny, TP 2 rank $rank (a process of MPI's world) alone (the other ranks' partial sums stood in by zero)" \
              "; TP 2 rank $rank alone: the other ranks' partial sums are stood in by zero in every reduction"; do
    grep -qF -- "$want" <<< "$out" || { echo "FAILED: no line with: $want"; exit 1; }
  done
done
[ "$(grep -c "^step 1: width 4, 2 requests (0 padded): kernels for 12 of 13 layers" <<< "$out")" -eq 2 ] ||
  { echo "FAILED: expected step 1 from both ranks"; exit 1; }
