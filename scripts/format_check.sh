#!/usr/bin/env bash
# Checks that the tracked C++ files of the checkout at ROOT (default: this one) are formatted as its
# .clang-format says, with clang-format 14 (Debian 12's; another version formats differently).
# Files written before the check existed are listed in scripts/format_pending.txt and may stay
# unformatted until someone formats them; the list only shrinks: a listed file that is formatted (or
# gone) must leave it, and every file not listed, new ones included, must be formatted.
# Exit 0: as required; 1: what is wrong and how to fix it; 2: no clang-format 14.
# usage: scripts/format_check.sh [ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
format=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$format" > /dev/null; then
  echo "format_check: $format not found; hint: scripts/install-deps.sh installs it (Debian: clang-format-14)" >&2
  exit 2
fi
cd "$root"
pending_list=scripts/format_pending.txt
declare -A pending=()
if [ -f "$pending_list" ]; then
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == \#* ]] || pending["$line"]=1
  done < "$pending_list"
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h')
[ ${#files[@]} -gt 0 ] || { echo "format_check: no C++ files tracked in $root" >&2; exit 2; }
declare -A tracked=()
unformatted=() now_formatted=()
for file in "${files[@]}"; do
  tracked["$file"]=1
  if "$format" --dry-run --Werror "$file" > /dev/null 2>&1; then
    [ -z "${pending[$file]:-}" ] || now_formatted+=("$file")
  else
    [ -n "${pending[$file]:-}" ] || unformatted+=("$file")
  fi
done
gone=()
for file in "${!pending[@]}"; do
  [ -n "${tracked[$file]:-}" ] || gone+=("$file")
done
status=0
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "format_check: ${#unformatted[@]} files are not formatted as .clang-format says:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "hint: $format -i <files>" >&2
  status=1
fi
if [ $((${#now_formatted[@]} + ${#gone[@]})) -gt 0 ]; then
  echo "format_check: $pending_list lists files that are formatted now or no longer exist; remove them:" >&2
  printf '  %s\n' "${now_formatted[@]}" "${gone[@]}" >&2
  status=1
fi
[ $status -ne 0 ] || echo "format_check: ${#files[@]} files, $(( ${#files[@]} - ${#pending[@]} )) formatted, ${#pending[@]} pending"
exit $status
