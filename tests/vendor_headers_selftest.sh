#!/usr/bin/env bash
# Proves vendor_headers_test.sh can fail: runs it on a scratch tree with planted violations and
# allowed vendor files, and checks it fails naming exactly the plants.
set -euo pipefail
check="$(cd "$(dirname "$0")" && pwd)/vendor_headers_test.sh"
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree"/{runtime,tools,jit,dsl/lower,tests/gpu}
printf '#include <cuda.h>\n' > "$tree/runtime/plant.cpp"
printf '  #  include "hip/hip_runtime_api.h"\n' > "$tree/tools/plant.h"
printf 'auto* f = &nvrtcCreateProgram;  // and hipModuleLaunchKernel\n' > "$tree/jit/plant.cpp"
printf '#include <amd_comgr/amd_comgr.h>\n' > "$tree/tests/plant_test.cpp"
# Allowed: vendor-named files, and words that only look similar.
printf '#include <cuda.h>\nauto x = cuInit;\n' > "$tree/runtime/device_cuda.cpp"
printf '#include <nvrtc.h>\n' > "$tree/jit/nvrtc.cpp"
printf '#include <hip/hiprtc.h>\n' > "$tree/tests/gpu/vector_add_hip_test.cpp"
printf 'const char* s = "__shfl_xor";\n' > "$tree/dsl/lower/spelling_amd.h"
printf '// compare with cuBLAS and hipBLAS; cudnn; a chip_id\n' > "$tree/dsl/ok.h"

status=0
output=$(bash "$check" "$tree" 2>&1) || status=$?
fail() { echo "FAIL: $*"; echo "--- output ---"; echo "$output"; exit 1; }
[ "$status" -eq 1 ] || fail "expected exit status 1, got $status"
expected=(
  'runtime/plant.cpp:1: includes a vendor header: #include <cuda.h>'
  'tools/plant.h:1: includes a vendor header:   #  include "hip/hip_runtime_api.h"'
  'jit/plant.cpp:1: names vendor API entry point "hipModuleLaunchKernel"'
  'jit/plant.cpp:1: names vendor API entry point "nvrtcCreateProgram"'
  'tests/plant_test.cpp:1: includes a vendor header: #include <amd_comgr/amd_comgr.h>'
)
for line in "${expected[@]}"; do
  grep -qxF "$line" <<<"$output" || fail "missing: $line"
done
found=$(grep -c ': includes a vendor header: \|: names vendor API entry point ' <<<"$output")
[ "$found" -eq "${#expected[@]}" ] || fail "expected ${#expected[@]} findings, got $found"
grep -q '^FAIL: 5 vendor reference(s) outside vendor-named files' <<<"$output" || fail "no summary"
echo "PASS: the check fails on exactly the ${#expected[@]} planted references"
