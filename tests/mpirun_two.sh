#!/usr/bin/env bash
# Runs a command as two MPI processes on this machine (the TP group's tests). Exit 77 (CTest:
# skipped) with the reason when there is no mpirun.
# usage: mpirun_two.sh COMMAND [ARG...]
set -euo pipefail
if ! command -v mpirun > /dev/null; then
  echo "skipped: mpirun not found; hint: scripts/install-deps.sh installs openmpi-bin"
  exit 77
fi
# Open MPI refuses to start as root unless told; CI runs as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Two processes on however few cores; shared memory between them without ptrace (CMA is often
# refused inside containers).
exec mpirun -np 2 --oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none "$@"
