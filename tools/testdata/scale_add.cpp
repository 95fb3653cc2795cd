// A kernel file for compile_command_test: two programs of one kernel.
#include <monotile/dsl/dsl.h>
#include <monotile/dsl/kernel_file.h>

using namespace monotile::dsl;  // NOLINT: kernels read best with the language's names in scope

Program scale_add(int block) {
  Builder b("test_scale_add_b" + std::to_string(block));
  Value x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32)), n = b.arg("n", i32);
  Value offsets = program_id(0) * block + arange(0, block);
  Value mask = offsets < n;
  store(y + offsets, load(x + offsets, mask) * 2.0f + load(y + offsets, mask), mask);
  return b.finish();
}

MONOTILE_KERNEL(scale_add(128));
MONOTILE_KERNEL(scale_add(target.warp_size() * 8));
#ifdef TEST_BLOCK  // from $CXXFLAGS
MONOTILE_KERNEL(scale_add(TEST_BLOCK));
#endif
