// A kernel file for compile_command_test: line 9 is not C++.
#include <monotile/dsl/dsl.h>
#include <monotile/dsl/kernel_file.h>

using namespace monotile::dsl;  // NOLINT

Program broken() {
  Builder b("test_broken");
  Value x = b.arg("x", ptr(f32)) + ;
  return b.finish();
}

MONOTILE_KERNEL(broken());
