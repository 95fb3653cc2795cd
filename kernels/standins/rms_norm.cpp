// The once-rounded row RMSNorm; see rms_norm.h.
#include "kernels/standins/rms_norm.h"

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"

namespace monotile::kernels::standins {

using namespace dsl;

Program rms_norm_program(const RmsNormShape& s) {
  Builder b(absl::StrCat("standin_rms_norm_w", s.width, "_xs", s.x_stride, "_ys", s.y_stride,
                         "_eps", s.eps),
            {.num_warps = 4});
  auto x = b.arg("x", ptr(bf16)), w = b.arg("w", ptr(bf16)), y = b.arg("y", ptr(bf16));
  auto token = program_id(0).to(i64);
  auto cols = arange(0, s.width);
  auto v = load(x + token * s.x_stride + cols).to(f32);
  auto rstd = rsqrt(sum(v * v) / float(s.width) + s.eps);
  store(y + token * s.y_stride + cols, (v * rstd * load(w + cols).to(f32)).to(bf16));
  return b.finish();
}

}  // namespace monotile::kernels::standins
