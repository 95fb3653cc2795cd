#!/usr/bin/env bash
# Checks that every tracked C++ file of the checkout at ROOT (default: this one) is formatted as its
# .clang-format says, with clang-format 14 (Debian 12's; another version formats differently).
# Exit 0: all formatted; 1: the files that are not, and how to fix them; 2: no clang-format 14.
# usage: scripts/format_check.sh [ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
format=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$format" > /dev/null; then
  echo "format_check: $format not found; hint: scripts/install-deps.sh installs it (Debian: clang-format-14)" >&2
  exit 2
fi
cd "$root"
mapfile -t files < <(git ls-files '*.cpp' '*.h')
[ ${#files[@]} -gt 0 ] || { echo "format_check: no C++ files tracked in $root" >&2; exit 2; }
unformatted=()
for file in "${files[@]}"; do
  "$format" --dry-run --Werror "$file" > /dev/null 2>&1 || unformatted+=("$file")
done
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "format_check: ${#unformatted[@]} of ${#files[@]} files are not formatted as .clang-format says:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "hint: $format -i <files> (or: git ls-files '*.cpp' '*.h' | xargs $format -i)" >&2
  exit 1
fi
echo "format_check: ${#files[@]} files formatted"
