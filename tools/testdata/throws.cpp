// A kernel file for compile_command_test: its kernel refuses a shape with a C++ exception.
#include <monotile/dsl/dsl.h>
#include <monotile/dsl/kernel_file.h>

#include <stdexcept>

using namespace monotile::dsl;  // NOLINT

Program picky(int hidden) {
  if (hidden % 64 != 0) throw std::invalid_argument("hidden must be a multiple of 64");
  Builder b("test_picky");
  Value x = b.arg("x", ptr(f32));
  store(x + arange(0, hidden), zeros({hidden}, f32));
  return b.finish();
}

MONOTILE_KERNEL(picky(100));
