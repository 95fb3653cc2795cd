#!/usr/bin/env bash
# The installed headers are closed: each public header includes, among the project's headers, only
# other public headers (an internal one would be missing from the install).
# usage: public_headers_test.sh SOURCE_DIR HEADER...
set -euo pipefail
root=$1
shift
declare -A public
for header in "$@"; do public[$header]=1; done
status=0
for header in "$@"; do
  while read -r included; do
    if [ -e "$root/$included" ] && [ -z "${public[$included]:-}" ]; then
      echo "$header includes \"$included\", which is not a public header (add it to MONOTILE_PUBLIC_HEADERS in package/CMakeLists.txt, or stop including it)"
      status=1
    fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$root/$header")
done
[ $status -eq 0 ] && echo "$# public headers, closed under #include"
exit $status
