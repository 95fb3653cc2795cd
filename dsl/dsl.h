// monotile's tile DSL: the one header a kernel author includes. A kernel is a C++ function that
// builds a Program; C++ is the meta-language (C++ loops unroll, C++ values are constants):
//
//   #include "dsl/dsl.h"
//   using namespace monotile::dsl;
//   Program rms_norm(int hidden, float eps) {             // y = x * rsqrt(mean(x^2) + eps) * w
//     Builder b("rms_norm", {.num_warps = 4});
//     auto x = b.arg("x", ptr(bf16)), w = b.arg("w", ptr(bf16)), y = b.arg("y", ptr(bf16));
//     auto row = program_id(0);
//     auto cols = arange(0, hidden);
//     auto v = load(x + row * hidden + cols).to(f32);
//     auto rstd = rsqrt(sum(v * v) / hidden + eps);
//     store(y + row * hidden + cols, (v * rstd * load(w + cols).to(f32)).to(bf16));
//     return b.finish();
//   }
//
// The language guide is docs/dsl.md; the IR's semantics open dsl/ir.h.
#pragma once

#include "dsl/arith.h"         // operators, where, minimum/maximum, casts
#include "dsl/builder.h"       // Builder
#include "dsl/control_flow.h"  // range, if_, while_
#include "dsl/creation.h"      // program_id, arange, full, zeros
#include "dsl/debug_ops.h"     // device_assert, print
#include "dsl/dot.h"           // dot, dequant_mxfp4, mxfp4_pairs, mxfp4_word_pairs, unpack_bf16
#include "dsl/dtype.h"         // i32, f32, bf16, ptr(...)
#include "dsl/error.h"         // dsl::Error
#include "dsl/ir.h"            // Program
#include "dsl/math.h"          // exp, rsqrt, sigmoid, ...
#include "dsl/memory.h"        // load, store, atomics, fences, wait_until
#include "dsl/reduce.h"        // sum, max, argmax, cumsum, sort, topk
#include "dsl/shape_ops.h"     // expand_dims, row, col, reshape, trans, join, split, cat
#include "dsl/value.h"         // Value
