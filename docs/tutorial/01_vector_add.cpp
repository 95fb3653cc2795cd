// Tutorial 1: vector add, the "hello world" of tile programming.
//
// A kernel is a C++ function that *builds* a program. The program runs once per *program
// instance*; the grid says how many. Here each instance adds one block of `block` elements:
//
//   offsets = program_id(0) * block + arange(0, block)   -- an i32 tile [block]
//   mask    = offsets < n                                -- i1 tile: which lanes are real
//
// `x + offsets` is a tile of pointers (pointer arithmetic advances by whole elements). A masked
// load reads only selected lanes (the others take `other`, zero by default, and touch no
// memory); a masked store writes only selected lanes. The last block is partial whenever n is not
// a multiple of `block`: without the mask it would read past the end of x, which the interpreter
// reports as an error naming the load's line (see the second test).
//
// `block` is a C++ value: each block size builds its own program (nothing is specialized
// implicitly). `n` is a kernel argument: one program serves every length.
#include <chrono>
#include <cstdio>
#include <vector>

#include "dsl/dsl.h"
#include "docs/tutorial/tutorial_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile::tutorial {
namespace {

using namespace monotile::dsl;  // NOLINT: kernels read best with the language's names in scope

Program vector_add(int block) {
  Builder b("vector_add");
  Value x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32)), out = b.arg("out", ptr(f32));
  Value n = b.arg("n", i32);
  Value offsets = program_id(0) * block + arange(0, block);
  Value mask = offsets < n;
  store(out + offsets, load(x + offsets, mask) + load(y + offsets, mask), mask);
  return b.finish();
}

// Same kernel without the mask: correct only when n is a multiple of block.
Program vector_add_unmasked(int block) {
  Builder b("vector_add_unmasked");
  Value x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32)), out = b.arg("out", ptr(f32));
  b.arg("n", i32);
  Value offsets = program_id(0) * block + arange(0, block);
  store(out + offsets, load(x + offsets) + load(y + offsets));
  return b.finish();
}

// Runs `program` on the interpreter over cdiv(n, block) instances.
absl::Status run(const Program& program, int block, std::vector<float>& x, std::vector<float>& y,
                 std::vector<float>& out) {
  const int n = static_cast<int>(x.size());
  dsl::interp::InterpretOptions options;
  options.allocations = {allocation(x, "x"), allocation(y, "y"), allocation(out, "out")};
  const std::vector<dsl::interp::ArgValue> args = {dsl::interp::ArgValue::of(x.data()), dsl::interp::ArgValue::of(y.data()),
                                                  dsl::interp::ArgValue::of(out.data()), dsl::interp::ArgValue::of(n)};
  return dsl::interp::interpret(program, {(n + block - 1) / block, 1, 1}, args, options);
}

TEST(TutorialVectorAdd, AddsEveryLength) {
  const Program program = vector_add(128);
  for (int n : {1, 127, 128, 1000, 4096}) {
    std::vector<float> x(n), y(n), out(n, -1.0f);
    for (int i = 0; i < n; ++i) x[i] = 0.5f * i, y[i] = 1.0f - i;
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(run(program, 128, x, y, out).ok()) << n;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], x[i] + y[i]) << "n " << n << " i " << i;
    if (n == 4096) std::printf("vector_add n=4096 (32 instances of 128) on the interpreter: %.3f ms\n", ms);
  }
}

TEST(TutorialVectorAdd, ForgettingTheMaskIsAnErrorNamingTheLine) {
  std::vector<float> x(1000, 1.0f), y(1000, 2.0f), out(1000);
  const absl::Status status = run(vector_add_unmasked(128), 128, x, y, out);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("load at 01_vector_add.cpp:"));
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("out of bounds: address"));
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr(", which holds 1000 elements of 4 bytes"));
}

}  // namespace
}  // namespace monotile::tutorial
