#!/usr/bin/env bash
# scripts/device_mpi.sh: its refusals' words; then, where Debian 12's archive answers, the packages
# fetched and unpacked into a fresh prefix, and `mpirun -np 2 monotile decode --mpi --tp 2 --check`
# on the CPU interpreter run from that prefix alone: as root with a private mount namespace, every
# file of the machine's own Open MPI and of the libraries it brings is made unreadable first, so the
# run can only have used the prefix's. Exit 77 (skipped) with the reason when the archive cannot be
# reached or the build has no MPI.
# usage: device_mpi_test.sh MONOTILE mpi|none
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
script=$here/device_mpi.sh
monotile=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
expect() {  # expect STATUS TEXT COMMAND...: exit status and a line of its output
  local status=$1 text=$2; shift 2
  local out
  out=$("$@" 2>&1)
  local got=$?
  [ $got -eq "$status" ] || fail "$*: exit $got, expected $status; output: $out"
  grep -qF -- "$text" <<< "$out" || fail "$*: no line with: $text; output: $out"
}

expect 2 "usage: scripts/device_mpi.sh fetch [DIR]" bash "$script"
expect 2 "device_mpi: unpack: no openmpi-bin_*.deb in $work/none; hint: scripts/device_mpi.sh fetch $work/none on a Debian 12 machine, then carry it" \
  bash "$script" unpack "$work/none" "$work/prefix"
echo "refusals: ok"

[ "${2:-mpi}" = none ] && { echo "skipped: built without MPI (scripts/install-deps.sh installs libopenmpi-dev)"; exit 77; }
if ! out=$(bash "$script" fetch "$work/debs" 2>&1); then
  echo "$out"
  echo "skipped: Debian 12's archive did not serve the packages (no network, or not Debian 12)"
  exit 77
fi
echo "$out"
bash "$script" unpack "$work/debs" "$work/prefix" || fail "unpack into a fresh prefix"
[ -x "$work/prefix/usr/bin/mpirun" ] || fail "no $work/prefix/usr/bin/mpirun after unpack"

# The run: a clean environment whose PATH has no mpirun but the prefix's.
run=(env -i HOME="$work" PATH=/usr/bin:/bin bash -c
     'source "$1/mpi-env.sh" && echo "mpirun: $(command -v mpirun)" &&
      mpirun -np 2 "$2" decode --mpi --tp 2 --model k3-tiny --device cpu --steps 1 --seed 3 --check \
        --outputs "$3"' _ "$work/prefix" "$monotile" "$work/outputs")
hide=$work/hide.sh
cat > "$hide" << 'EOF'
set -e
empty=$(mktemp -d)
for dir in /usr/lib/x86_64-linux-gnu/openmpi /usr/share/openmpi /etc/openmpi /usr/lib/x86_64-linux-gnu/pmix2 \
           /usr/lib/x86_64-linux-gnu/ucx /usr/lib/x86_64-linux-gnu/libibverbs; do
  [ -d "$dir" ] && mount --bind "$empty" "$dir"
done
hidden=0
for file in $(dpkg -L $PACKAGES 2>/dev/null); do
  if [ -f "$file" ] && [ ! -L "$file" ] && [ "${file#*/share/doc/}" = "$file" ]; then
    mount --bind /dev/null "$file" 2> /dev/null && hidden=$((hidden + 1))
  fi
done
echo "hidden: $hidden files of the machine's Open MPI and its libraries"
exec "$@"
EOF
packages=$(sed -n '/^PACKAGES=(/,/)/p' "$script" | tr -d '()' | sed 's/PACKAGES=//')
if [ "$(id -u)" -eq 0 ] && unshare -m --propagation private true 2> /dev/null; then
  out=$(PACKAGES="$packages" unshare -m --propagation private bash "$hide" "${run[@]}" 2>&1)
else
  echo "note: not root or no mount namespace: the machine's own Open MPI is left readable"
  out=$("${run[@]}" 2>&1)
fi
status=$?
echo "$out"
[ $status -eq 0 ] || fail "mpirun from the prefix exited $status"
grep -qxF "mpirun: $work/prefix/usr/bin/mpirun" <<< "$out" || fail "mpirun was not the prefix's"
if grep -q "^hidden: " <<< "$out"; then
  [ "$(sed -n 's/^hidden: \([0-9]*\) .*/\1/p' <<< "$out")" -gt 100 ] || fail "too few files hidden"
fi
[ "$(grep -c "^every served layer passes its check against the float64 reference$" <<< "$out")" -eq 2 ] ||
  fail "expected both ranks to pass every layer's check"
digests() { sed -n "s/^  output digest (prefix, blocks, the last layer's output), TP 2 rank $1: //p" <<< "$out"; }
[ "$(digests 0 | wc -l)" -eq 1 ] || fail "expected 1 digest from rank 0, got: $(digests 0)"
[ "$(digests 0)" = "$(digests 1)" ] || fail "the ranks' digests differ: rank 0 $(digests 0), rank 1 $(digests 1)"
cmp "$work/outputs.rank0" "$work/outputs.rank1" || fail "the ranks' outputs differ"
echo "passed"
