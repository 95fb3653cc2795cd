#!/usr/bin/env bash
# `mpirun -np 2 monotile decode --mpi --check` at k3-tiny on the CPU interpreter: two ranks, one a
# process, exchanging their partial sums (K2's over peer buffers in shared memory, the host
# stand-ins' through MPI). Every served layer passes its check against the float64 reference over
# both ranks (TP 1's layer, up to rounding), both ranks print the same digest at every step, and
# their --outputs files are the same bytes; with --graph (a step captured, then replayed on new
# metadata) both ranks print the eager run's digests. Then a refusal: --check with weights made on
# the device. Exit 77 (skipped) without mpirun.
# usage: decode_command_mpi_test.sh MONOTILE mpi|none (none: the build has no MPI)
set -uo pipefail
if [ "${2:-mpi}" = none ]; then
  echo "skipped: built without MPI; hint: scripts/install-deps.sh installs libopenmpi-dev, then configure again"
  exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$(bash "$here/../tests/mpirun_two.sh" "$1" decode --mpi --device cpu --steps 2 --seed 3 --check \
  --outputs "$work/outputs" 2>&1)
status=$?
echo "$out"
[ $status -eq 77 ] && exit 77
[ $status -eq 0 ] || { echo "FAILED: mpirun exited $status"; exit 1; }
fail() { echo "FAILED: $*"; exit 1; }
for rank in 0 1; do
  want="monotile decode: k3-tiny, TP 2 rank $rank (a process of MPI's world) exchanging partial sums with the other ranks"
  grep -qF -- "$want" <<< "$out" || fail "no line with: $want"
  want="; TP 2 rank $rank: K2 exchanges partial sums over the group's peer buffers"
  grep -qF -- "$want" <<< "$out" || fail "no line with: $want"
done
grep -q "stood in" <<< "$out" && fail "an exchanging run says that partial sums are stood in"
[ "$(grep -c "^every served layer passes its check against the float64 reference$" <<< "$out")" -eq 2 ] ||
  fail "expected both ranks to pass every layer's check"
for step in 1 2; do
  [ "$(grep -c "^step $step: width 4, 2 requests ([01] padded): kernels for 12 of 13 layers" <<< "$out")" -eq 2 ] ||
    fail "expected step $step from both ranks"
done
# Each rank's digests in step order; the two lists must be equal (and hold both steps).
digests() { sed -n "s/^  output digest (prefix, blocks, the last layer's output), TP 2 rank $1: //p" <<< "$out"; }
[ "$(digests 0 | wc -l)" -eq 2 ] || fail "expected 2 digests from rank 0, got: $(digests 0)"
[ "$(digests 0)" = "$(digests 1)" ] || fail "the ranks' digests differ: rank 0 $(digests 0), rank 1 $(digests 1)"
[ -s "$work/outputs.rank0" ] || fail "rank 0 wrote no --outputs file"
cmp "$work/outputs.rank0" "$work/outputs.rank1" || fail "the ranks' outputs differ"

# The same steps with --graph: each rank captures the step once (its exchanges and the epoch bump
# inside the graphs) and replays it at step 2 on new metadata; the digests are the eager run's.
eager0=$(digests 0)
out=$(bash "$here/../tests/mpirun_two.sh" "$1" decode --mpi --device cpu --steps 2 --seed 3 --graph 2>&1)
status=$?
[ $status -eq 0 ] || { echo "$out"; fail "mpirun with --graph exited $status"; }
[ "$(grep -c "^  graph: replayed width 4's step" <<< "$out")" -eq 2 ] || { echo "$out"; fail "expected both ranks to replay step 2"; }
[ "$(digests 0)" = "$eager0" ] || fail "rank 0's digests with --graph ($(digests 0)) differ from the eager run's ($eager0)"
[ "$(digests 1)" = "$eager0" ] || fail "rank 1's digests with --graph ($(digests 1)) differ from the eager run's ($eager0)"

# --check over every rank reads the model's weights; weights made on the device are refused.
out=$(bash "$here/../tests/mpirun_two.sh" "$1" decode --mpi --device cpu --steps 1 --check --alias-weights 2>&1)
want="monotile decode: --check with --mpi at TP 2 and weights made on the device: the check's reference sums every rank's partials from the model's weights, which these are not; expected weights read from the model; hint: drop --alias-weights, or --check one rank alone (--tp 2 --rank R without --mpi)"
# Both ranks refuse alike; mpirun ends the job at the first one's exit, so one line may be all.
[ "$(grep -cF -- "$want" <<< "$out")" -ge 1 ] || { echo "$out"; fail "expected a refusal: $want"; }
grep -q "^step 1" <<< "$out" && fail "a rank ran a step before refusing"
echo "passed"
