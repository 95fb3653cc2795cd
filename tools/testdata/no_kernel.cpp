// A kernel file for compile_command_test: it builds a program but names none with MONOTILE_KERNEL.
#include <monotile/dsl/dsl.h>
#include <monotile/dsl/kernel_file.h>

using namespace monotile::dsl;  // NOLINT

Program forgotten() {
  Builder b("test_forgotten");
  Value x = b.arg("x", ptr(f32));
  store(x + arange(0, 64), zeros({64}, f32));
  return b.finish();
}
