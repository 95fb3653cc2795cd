#!/usr/bin/env bash
# Proof that scripts/format_check.sh fails when it should: in a scratch repository with the project's
# .clang-format, a formatted file passes, a misformatted one fails and is named.
set -euo pipefail
project=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
git init -q .
cp "$project/.clang-format" .
printf 'int add(int a, int b) {\n  return a + b;\n}\n' > good.cpp
git add .clang-format good.cpp
"$project/scripts/format_check.sh" "$scratch" > /dev/null || { echo "a formatted file was refused"; exit 1; }
printf 'int   sub( int a,int b ){return a-b;}\n' > bad.cpp
git add bad.cpp
if "$project/scripts/format_check.sh" "$scratch" 2> err.txt; then
  echo "a misformatted file passed"
  exit 1
fi
grep -q "bad.cpp" err.txt || { echo "the misformatted file was not named:"; cat err.txt; exit 1; }
grep -q "good.cpp" err.txt && { echo "the formatted file was named:"; cat err.txt; exit 1; }
echo "format_check refuses a misformatted file and names it"
