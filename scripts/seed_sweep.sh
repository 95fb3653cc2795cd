#!/usr/bin/env bash
# Runs the CPU test suite (everything but the gpu label) under many seeds, one run per seed, and
# lists what failed under which seed. Each failure replays alone with
#   MONOTILE_TEST_SEED=<seed> ctest --test-dir BUILD -R '<test>'
# usage: scripts/seed_sweep.sh [--build-dir DIR] [--jobs N] [--only-seeded [--seeded-list FILE]] SEED...
#        scripts/seed_sweep.sh [--build-dir DIR] [--jobs N] [--only-seeded] --count N   (seeds 1..N)
#        scripts/seed_sweep.sh ... --from N --count M   (seeds N..M)
# --only-seeded runs, after a first full run, only the tests that drew from the seed in it (the
# others cannot change with it); --seeded-list takes that list from an earlier sweep's
# seeded_<seed>.txt instead of a first full run. Logs go to <build>/seed_sweep/. Exit status 1 when
# any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
build=build jobs=$(nproc) only_seeded=0 seeds=() first=1 list=
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --only-seeded) only_seeded=1; shift ;;
    --seeded-list) list=$(realpath "$2"); shift 2 ;;
    --from) first=$2; shift 2 ;;
    --count) for ((i = first; i <= $2; i++)); do seeds+=("$i"); done; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) seeds+=("$1"); shift ;;
  esac
done
[ ${#seeds[@]} -gt 0 ] || { echo "usage: $0 [--build-dir DIR] [--jobs N] [--only-seeded] SEED... | --count N" >&2; exit 2; }
[ -f "$build/CTestTestfile.cmake" ] || { echo "no build in $build: run scripts/bootstrap.sh test first" >&2; exit 2; }
logs=$(cd "$build" && pwd)/seed_sweep  # absolute: tests run in their own folders; the emulation
# objects (seed_sweep-emulation/) outlive a sweep: they never depend on the seed
rm -rf "$logs"
mkdir -p "$logs"
status=0 filter=(-LE gpu)
# The tests named in a list of seeded tests, by CTest number (-I 0,0,0,N,...): a regex of a thousand
# names is too large for CTest. Numbers count every test, so no label filter may go with them.
# CTest names are gtest's Suite.Test, some behind a prefix ("compile.").
select_seeded() {
  local numbers
  numbers=$(ctest --test-dir "$build" -N | sed -n 's/^ *Test *#\([0-9]*\): \(.*\)$/\1 \2/p' |
    awk 'NR == FNR { seeded[$0] = 1; next } { name = $2; sub(/^[a-z]+\./, "", name) }
         (name in seeded) || ($2 in seeded) { printf "%s,", $1 }' <(sort -u "$1") -)
  filter=(-I "0,0,0,${numbers%,}")
  echo "  (these seeds: the $(sort -u "$1" | wc -l) tests that drew from the seed)"
}
[ $only_seeded -eq 1 ] && [ -n "$list" ] && select_seeded "$list"
for seed in "${seeds[@]}"; do
  start=$(date +%s)
  MONOTILE_TEST_SEED=$seed MONOTILE_TEST_SEED_LOG=$logs/seeded_$seed.txt MONOTILE_EMULATION_CACHE=$logs-emulation \
    ctest --test-dir "$build" -j"$jobs" --output-on-failure "${filter[@]}" > "$logs/seed_$seed.log" 2>&1
  result=$?
  summary=$(grep -E "tests passed" "$logs/seed_$seed.log" | tail -1)
  echo "seed $seed: ${summary:-no summary} ($(( $(date +%s) - start )) s)"
  if [ $result -ne 0 ]; then
    status=1
    sed -n '/The following tests FAILED/,$p' "$logs/seed_$seed.log" | grep -E '^\s+[0-9]+ - ' | sed 's/^/    /'
  fi
  if [ $only_seeded -eq 1 ] && [ "${filter[0]}" = -LE ] && [ -s "$logs/seeded_$seed.txt" ]; then
    select_seeded "$logs/seeded_$seed.txt"
  fi
done
exit $status
