#!/usr/bin/env bash
# The vendor boundary: outside vendor-named files, no C++ source in dsl cache jit kernels runtime
# tools tests includes a CUDA or HIP header (cuda*.h, hip/..., nvrtc.h, hiprtc.h, amd_comgr...) or
# names a vendor API entry point (cuXxx, cudaXxx, hipXxx, nvrtcXxx, hiprtcXxx, amd_comgr_xxx), in
# code, strings or comments. A file is vendor-named when a component of its name (split at "_" and
# ".") is cuda, hip, nvrtc, hiprtc or comgr, or it starts with "spelling_": foo_cuda.cpp,
# foo_cuda_test.cpp, nvrtc.cpp, spelling_amd.h.
# usage: vendor_headers_test.sh [ROOT]   (ROOT defaults to the repository holding this script)
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
folders=(dsl cache jit kernels runtime tools tests)

is_vendor_named() {
  local name=${1##*/}
  [[ $name == spelling_* ]] && return 0
  local part
  for part in ${name//[_.]/ }; do
    case $part in cuda|hip|nvrtc|hiprtc|comgr) return 0 ;; esac
  done
  return 1
}

include_pattern='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](cuda[^/">]*\.h|hip/[^">]+|nvrtc\.h|hiprtc\.h|amd_comgr[^">]*)[">]'
entry_pattern='\b(cu[A-Z][a-z]\w*|cuda[A-Z][a-z]\w*|hip[A-Z][a-z]\w*|nvrtc[A-Z][a-z]\w*|hiprtc[A-Z][a-z]\w*|amd_comgr_[a-z]\w*)'

violations=0
checked=0
while IFS= read -r -d '' file; do
  is_vendor_named "$file" && continue
  checked=$((checked + 1))
  relative=${file#"$root"/}
  while IFS= read -r hit; do
    echo "$relative:${hit%%:*}: includes a vendor header: ${hit#*:}"
    violations=$((violations + 1))
  done < <(grep -nE "$include_pattern" "$file" || true)
  while IFS= read -r hit; do
    line=${hit%%:*}
    for name in $(grep -oP "$entry_pattern" <<<"${hit#*:}" | sort -u); do
      echo "$relative:$line: names vendor API entry point \"$name\""
      violations=$((violations + 1))
    done
  done < <(grep -nP "$entry_pattern" "$file" || true)
done < <(cd "$root" && for folder in "${folders[@]}"; do
           [ -d "$root/$folder" ] && find "$root/$folder" -type f \
             \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' -o -name '*.inc' \) -print0
         done)

if [ "$violations" -gt 0 ]; then
  echo "FAIL: $violations vendor reference(s) outside vendor-named files; hint: move the code into a" \
       "file whose name carries the vendor (foo_cuda.cpp, nvrtc.cpp, spelling_amd.h) behind a" \
       "vendor-neutral interface" >&2
  exit 1
fi
echo "PASS: $checked files outside vendor-named ones reference no vendor header or entry point"
