#!/usr/bin/env bash
# `monotile devices` end to end: exits 0, lists the CPU interpreter, and for NVIDIA and AMD either
# lists a device or says why there is none (on a machine without GPUs: both reasons).
# usage: devices_command_test.sh path/to/monotile
set -euo pipefail
binary=${1:?usage: $0 path/to/monotile}
fail() { echo "FAIL: $*" >&2; echo "--- output ---" >&2; echo "$output" >&2; exit 1; }

status=0
output=$("$binary" devices 2>&1) || status=$?
[ "$status" -eq 0 ] || fail "monotile devices exited $status, expected 0"
echo "$output"

grep -q '^devices:$' <<<"$output" || fail "no 'devices:' header"
grep -Eq '^  [0-9]+  CPU +cpu interpreter +cpu ' <<<"$output" || fail "the CPU interpreter is not listed"

check_vendor() {
  local vendor=$1 reason_pattern=$2
  if grep -Eq "^  [0-9]+  $vendor " <<<"$output"; then
    echo "ok: $vendor device listed"
  elif grep -Eq "^  $vendor +$reason_pattern" <<<"$output"; then
    echo "ok: $vendor missing, with its reason"
  else
    fail "neither a $vendor device nor a reason why there is none"
  fi
}
check_vendor NVIDIA '(no NVIDIA driver: dlopen\("libcuda\.so\.1"\) failed: .+|NVIDIA driver .+ is present but .+|NVIDIA driver .+ lacks an entry point .+|the driver reported devices but none is usable.*)$'
check_vendor AMD '(no AMD HIP runtime: dlopen\("libamdhip64\.so\.6"\) failed: .+|AMD HIP runtime .+ is present but .+|AMD HIP runtime .+ lacks an entry point .+|the driver reported devices but none is usable.*)$'

# Arguments are refused with a message and exit status 2.
status=0
output=$("$binary" devices --bogus 2>&1) || status=$?
[ "$status" -eq 2 ] || fail "monotile devices --bogus exited $status, expected 2"
grep -q 'monotile devices: takes no arguments, got "--bogus"' <<<"$output" || fail "no message for --bogus"
echo "PASS"
