// A kernel file: the gated RMSNorm of a KDA layer's output (K3's o_norm, one program per row),
//
//   y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w * sigmoid(g[r, :])
//
// written with the DSL against the installed package. `monotile compile gated_rms_norm.cpp` builds
// this file, asks it for the programs named by MONOTILE_KERNEL and compiles each for every target;
// gated_rms_norm_check.cpp runs the same function on the CPU interpreter against float64.
#include <monotile/dsl/dsl.h>
#include <monotile/dsl/kernel_file.h>

#include <string>

using namespace monotile::dsl;  // NOLINT: kernels read best with the language's names in scope

// bf16 in memory, f32 arithmetic, one rounding on the way out. `hidden` and `eps` are C++ values:
// each pair is its own program (and its own build in the cache).
Program gated_rms_norm(int hidden, float eps) {
  Builder b("gated_rms_norm_h" + std::to_string(hidden), {.num_warps = 4});
  Value x = b.arg("x", ptr(bf16)), g = b.arg("g", ptr(bf16));
  Value w = b.arg("w", ptr(bf16)), y = b.arg("y", ptr(bf16));
  Value row = program_id(0).to(i64) * hidden;  // i64 offsets: rows * hidden may pass 2^31
  Value cols = arange(0, hidden);
  Value v = load(x + row + cols).to(f32);
  Value rstd = rsqrt(sum(v * v) / float(hidden) + eps);
  Value gate = sigmoid(load(g + row + cols).to(f32));
  store(y + row + cols, (v * rstd * load(w + cols).to(f32) * gate).to(bf16));
  return b.finish();
}

// What `monotile compile` builds: K3's per-head o_norm (head_dim 128), and a whole hidden row.
MONOTILE_KERNEL(gated_rms_norm(128, 1e-5f));
MONOTILE_KERNEL(gated_rms_norm(7168, 1e-6f));
