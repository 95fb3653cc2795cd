// A kernel file for compile_command_test: the mask on line 11 has another shape than the pointers.
#include <monotile/dsl/dsl.h>
#include <monotile/dsl/kernel_file.h>

using namespace monotile::dsl;  // NOLINT

Program bad_mask(int block) {
  Builder b("test_bad_mask");
  Value x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
  Value offsets = arange(0, block);
  store(y + offsets, load(x + offsets, arange(0, 8) < 4));
  return b.finish();
}

MONOTILE_KERNEL(bad_mask(128));
