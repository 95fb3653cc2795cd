#!/usr/bin/env bash
# Proof that scripts/format_check.sh fails when it should, in a scratch repository with the project's
# .clang-format: a formatted file passes; a misformatted one fails and is named, unless it is listed
# as pending; a pending entry for a formatted or missing file fails (the list only shrinks).
set -euo pipefail
project=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
git init -q .
mkdir scripts
cp "$project/.clang-format" .
check() { "$project/scripts/format_check.sh" "$scratch" > out.txt 2> err.txt; }
fail() { echo "$1"; cat out.txt err.txt; exit 1; }
printf 'int add(int a, int b) {\n  return a + b;\n}\n' > good.cpp
git add .clang-format good.cpp
check || fail "a formatted file was refused"
printf 'int   sub( int a,int b ){return a-b;}\n' > bad.cpp
git add bad.cpp
! check || fail "a misformatted file passed"
grep -q "bad.cpp" err.txt || fail "the misformatted file was not named"
! grep -q "good.cpp" err.txt || fail "the formatted file was named"
printf '# comment\nbad.cpp\n' > scripts/format_pending.txt
check || fail "a pending file was refused"
printf 'bad.cpp\ngood.cpp\n' > scripts/format_pending.txt
! check || fail "a formatted file listed as pending passed"
grep -q "good.cpp" err.txt || fail "the stale pending entry was not named"
printf 'bad.cpp\ngone.cpp\n' > scripts/format_pending.txt
! check || fail "a pending entry for a missing file passed"
grep -q "gone.cpp" err.txt || fail "the missing file was not named"
echo "format_check refuses misformatted files and stale pending entries, and names them"
