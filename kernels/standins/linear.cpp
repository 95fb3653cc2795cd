// y = bf16(x W^T) per (row block, token); see linear.h.
#include "kernels/standins/linear.h"

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"
#include "support/check.h"

namespace monotile::kernels::standins {

using namespace dsl;

namespace {

// The smallest power of two >= n (tiles are powers of two; the lanes past n are masked).
int tile_size(int n, int cap) {
  int size = 16;
  while (size < n && size < cap) size *= 2;
  return size;
}

}  // namespace

LinearShape linear_shape(int rows, int cols) {
  return {.rows = rows, .cols = cols, .x_stride = cols, .y_stride = rows};
}

Grid linear_grid(const LinearShape& shape, int tokens) {
  return {.x = (shape.rows + shape.block_rows - 1) / shape.block_rows, .y = tokens, .z = 1};
}

Program linear_program(const LinearShape& s) {
  MT_CHECK(s.rows > 0 && s.cols > 0 && s.x_stride >= s.cols && s.y_stride >= s.rows,
           "bad linear shape");
  Builder b(
      absl::StrCat("standin_linear_n", s.rows, "_k", s.cols, "_xs", s.x_stride, "_ys", s.y_stride),
      {.num_warps = 4});
  auto x = b.arg("x", ptr(bf16)), w = b.arg("w", ptr(bf16)), y = b.arg("y", ptr(bf16));
  const int block_k = tile_size(s.cols, s.block_cols);
  auto token = program_id(1).to(i64);
  auto rows = program_id(0) * s.block_rows + arange(0, s.block_rows);
  auto row_ok = rows < s.rows;
  auto acc = range(0, s.cols, block_k, zeros({s.block_rows}, f32), [&](Value k0, Value acc) {
    auto ks = k0 + arange(0, block_k);
    auto k_ok = ks < s.cols;
    auto xs = load(x + token * s.x_stride + ks, k_ok, 0.0f).to(f32);
    auto ws = load(w + col(rows).to(i64) * s.cols + row(ks), col(row_ok) & row(k_ok), 0.0f).to(f32);
    return acc + sum(ws * row(xs), 1);
  });
  store(y + token * s.y_stride + rows, acc.to(bf16), row_ok);
  return b.finish();
}

}  // namespace monotile::kernels::standins
