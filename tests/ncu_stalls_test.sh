#!/usr/bin/env bash
# scripts/ncu_stalls.py on a small source page laid out as ncu writes it: the shares by reason and by
# instruction come out of the samples, --range lists the code, --lines charges the samples to the
# C++ lines of an nvdisasm -g listing (a generated helper's to the DSL line before it) and refuses a
# listing of other code, and a CSV of another page is refused with the command that makes the right one.
set -euo pipefail
script=$1/scripts/ncu_stalls.py
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/page.csv" <<'CSV'
"Kernel Name","k",
"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_barrier","stall_long_sb","stall_barrier (Not Issued)"
"0x0","      LDG.E.128 R4, desc[UR4][R2.64]","10","100","0","10","0"
"0x10","      UMOV UR4, 0x400","30","8","30","0","30"
"0x20","  @P0 HMMA.16816.F32.BF16 R8, R4, R6, R8","0","50","0","0","0"
CSV
out=$(python3 "$script" "$dir/page.csv" --top 2 --window 2)
expect() { grep -qF -- "$1" <<<"$out" || { echo "missing: $1"; echo "$out"; exit 1; }; }
expect "40 stall samples over 3 instructions"
expect "barrier                     30  75.0%"
expect "long_sb                     10  25.0%"
expect "       1 75.00% ex=       8 UMOV UR4, 0x400"
expect "       0-     2 100.0%    0.00M  LDG:0k UMOV:0k"
out=$(python3 "$script" "$dir/page.csv" --range 2 3)
expect "     2      0 ex=      50 @P0 HMMA.16816.F32.BF16 R8, R4, R6, R8"
cat > "$dir/k.sass" <<'SASS'
	//## File "/src/kernels/k3/k1.cpp", line 226
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
	//## File "/src/k3_k1_generated.cu", line 12
        /*0010*/                   UMOV UR4, 0x400 ;
	//## File "/src/kernels/k3/gemv_task.cpp", line 26
        /*0020*/              @P0 HMMA.16816.F32.BF16 R8, R4, R6, R8 ;
SASS
out=$(python3 "$script" "$dir/page.csv" --lines "$dir/k.sass" --top 2)
expect "40 stall samples; the 2 lines with the most"
expect "  100.0%        108  k1.cpp:226                   barrier 75%, long_sb 25%"
expect "    0.0%         50  gemv_task.cpp:26"
sed -i 's/LDG.E.128/LDS.128/' "$dir/k.sass"
if out=$(python3 "$script" "$dir/page.csv" --lines "$dir/k.sass" 2>&1); then echo "another listing was accepted"; exit 1; fi
expect "1 instructions differ between the listing and the profile"
printf '"Kernel Name","k",\n"Address","Source"\n' > "$dir/details.csv"
if out=$(python3 "$script" "$dir/details.csv" 2>&1); then echo "a page without samples was accepted"; exit 1; fi
expect "no column 'Warp Stall Sampling (All Samples)'"
expect "--page source --csv --print-source sass"
echo "ncu_stalls: ok"
