#include "kernels/k3/mxfp4_gemv.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"
#include "kernels/k3/pipeline.h"
#include "support/check.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

constexpr int kGroup = 32;

// 2^(code - 127) built from its bits (exact; code 0 is the subnormal 2^-127, 255 is NaN).
Value e8m0_value(const Value& code) {
  auto normal = (code << 23).bitcast(f32);
  return where(code == 0, std::ldexp(1.0f, -127),
               where(code == 255, std::numeric_limits<float>::quiet_NaN(), normal));
}

// The e2m1 code in bits 28..31 of `bits` (i32) times `scale`, as bf16. An arithmetic shift by 6
// copies the code's sign over bits 25..31 and puts its exponent and mantissa on bits 22..24;
// masked, that reads as an f32 whose value is the e2m1 value times 2^-126 (a subnormal for codes 0
// and 1, so the targets keep f32 subnormals: no flush-to-zero). 2^126 and the scale are powers of
// two, so the product rounds nowhere, and it has at most 2 significant bits in bf16's exponent
// range (down to 0.5 x 2^-127): its f32 bits' high half is the bf16 itself, taken without a
// rounding step.
Value e2m1_value(const Value& bits, const Value& scale) {
  auto code = (bits >> 6) & static_cast<int32_t>(0x81C00000u);
  auto product = code.bitcast(f32) * std::ldexp(1.0f, 126) * scale;
  return (product.bitcast(i32) >> 16).to(i16).bitcast(bf16);
}

}  // namespace

Value mxfp4_x_position(const Value& e) {
  return (e & ~7) | ((e & 3) << 1) | ((e >> 2) & 1);
}

namespace {

// With Mxfp4Gemv::words: a K step's packed words (staged where g.stages) and its scale codes, a
// code a word (a group's 4 words give one scale address, read once).
Value load_words(const Mxfp4Gemv& g, const Value& rows, const Value& row_ok, const Value& byte0) {
  auto words_in_step = (byte0 >> 2) + arange(0, g.step / 8);
  return load(bitcast(g.packed, ptr(i32)) + col(rows).to(i64) * (g.k / 8) + row(words_in_step),
              col(row_ok), {.cache = Cache::streaming, .l2_fetch = g.l2_fetch, .stages = g.stages});
}

Value load_word_codes(const Mxfp4Gemv& g, const Value& rows, const Value& row_ok,
                      const Value& byte0) {
  auto words_in_step = (byte0 >> 2) + arange(0, g.step / 8);
  return load(g.scales + col(rows).to(i64) * (g.k / kGroup) + row(words_in_step >> 2), col(row_ok));
}

}  // namespace

Mxfp4Packed mxfp4_load(const Mxfp4Gemv& g, const Value& rows, const Value& row_ok,
                       const Value& byte0) {
  auto base = col(rows).to(i64);
  if (g.pairs && g.words) {
    return {.bytes = load_words(g, rows, row_ok, byte0),
            .codes = load_word_codes(g, rows, row_ok, byte0),
            .x = Value()};
  }
  auto bytes_in_step = byte0 + arange(0, g.step / 2);
  // Each packed byte read once, a row's bytes as 16-byte vectors. The 16 bytes of a scale's group
  // give one scale address (>> keeps that visible to the lowering), which is read once per group.
  return {.bytes = load(g.packed + base * (g.k / 2) + row(bytes_in_step), col(row_ok),
                        {.cache = Cache::streaming, .l2_fetch = g.l2_fetch}),
          .codes = load(g.scales + base * (g.k / kGroup) + row(bytes_in_step >> 4), col(row_ok)),
          .x = Value()};
}

Mxfp4Step mxfp4_decode(const Mxfp4Packed& packed) {
  auto bytes = packed.bytes.to(i32);
  auto scale = e8m0_value(packed.codes.to(i32));
  return {.low = e2m1_value(bytes << 28, scale), .high = e2m1_value(bytes << 24, scale)};
}

int mxfp4_step(int64_t k, int max_step) {
  for (int step = max_step; step >= kGroup; step /= 2) {
    if (k % step == 0) return step;
  }
  return 0;
}

int looped_step(int64_t k, int max_step, int min_steps) {
  int step = mxfp4_step(k, max_step);
  while (step > kGroup && k / step < min_steps) step /= 2;
  return step;
}

namespace {

// One K step of `g` at packed byte byte0 into the accumulators `acc` (two chains of the unit's
// latency instead of one twice as long; they meet after the loop). Word j of x's pairs holds the
// columns of byte j's two nibbles.
// - Pairs (Mxfp4Gemv::pairs): each byte's two values, decoded and scaled at once, are one word of
//   two bf16 (mxfp4_pairs), K neighbours as x's words are: both dot operands come straight from
//   the words' registers (unpack_bf16). With words, each packed word's eight values come as four
//   such words in mxfp4_x_position's order, which x's words then hold. The step goes into chain
//   `parity`.
// - Else K in the order the bytes hold it: the low nibbles' columns, then the high nibbles', each
//   decoded in f32 and taken as a bf16's bits (no conversion, so no rounding step for the compiler
//   to keep); x's halves likewise. The low nibbles' dot goes into chain 0, the high ones' into 1.
Value load_x(const Mxfp4Gemv& g, const Value& x_pairs, const Value& byte0) {
  const int64_t row_bytes = g.k / 2, step_bytes = g.step / 2;
  auto ms = arange(0, g.token_rows);
  auto at = x_pairs + col(ms) * row_bytes + row(byte0 + arange(0, step_bytes));
  return g.x_padded ? load(at, {.stages = g.stages})
                    : load(at, col(ms < g.tokens), {.stages = g.stages});
}

// `bias`: the decode's scale bias (0, or g.scale_bias on a task whose codes allow it).
std::array<Value, 2> accumulate_step(const Mxfp4Gemv& g, const Value& x_pairs, const Value& byte0,
                                     const std::array<Value, 2>& acc, const Mxfp4Packed& packed,
                                     int parity, int bias) {
  auto pairs = packed.x.empty() ? load_x(g, x_pairs, byte0) : packed.x;
  if (g.pairs) {
    auto w = unpack_bf16(g.words ? mxfp4_word_pairs(packed.bytes, packed.codes, bias, g.placement)
                                 : mxfp4_pairs(packed.bytes, packed.codes));
    std::array<Value, 2> out = acc;
    out[parity] = dot(w, trans(unpack_bf16(pairs)), acc[parity]);
    return out;
  }
  Mxfp4Step w = mxfp4_decode(packed);
  auto x_low = ((pairs << 16) >> 16).to(i16).bitcast(bf16);
  auto x_high = (pairs >> 16).to(i16).bitcast(bf16);
  return {dot(w.low, trans(x_low), acc[0]), dot(w.high, trans(x_high), acc[1])};
}

// A step's loads as the pipeline carries them (pipeline.h): bytes, codes, then x where it comes
// with them.
std::vector<Value> carried_values(const Mxfp4Packed& p) {
  std::vector<Value> values{p.bytes, p.codes};
  if (!p.x.empty()) values.push_back(p.x);
  return values;
}

Mxfp4Packed carried_packed(const std::vector<Value>& values) {
  return {.bytes = values[0], .codes = values[1], .x = values.size() == 3 ? values[2] : Value()};
}

// The L2 prefetch of Mxfp4Gemv::prefetch_steps: each row's packed bytes at byte0 (one line a row
// covers a step's step / 2 bytes up to 128).
void prefetch_step(const Mxfp4Gemv& g, const Value& rows, const Value& row_ok, const Value& byte0) {
  prefetch(g.packed + rows.to(i64) * (g.k / 2) + byte0.to(i64), row_ok);
}

// The settings a GEMV's loop takes (a kernel author's error, not a user's: K2Build and the tests
// pick them).
void check_shape(const Mxfp4Gemv& g) {
  MT_CHECK(g.ahead >= 1 && g.ahead <= kMxfp4MaxAhead, "Mxfp4Gemv::ahead is 1 to ", kMxfp4MaxAhead);
  MT_CHECK(!g.words || g.pairs, "Mxfp4Gemv::words decodes pairs: set pairs too");
  MT_CHECK(g.scale_bias == 0 || (g.words && g.scale_bias >= kMinMxfp4ScaleBias && g.scale_bias < 0),
           "Mxfp4Gemv::scale_bias is 0, or -126..-1 with words");
  MT_CHECK((g.token_rows == 8 || g.token_rows == kMxfp4Tokens) && g.tokens <= g.token_rows,
           "Mxfp4Gemv::token_rows is 8 or 16, at least tokens");
  MT_CHECK(g.prefetch_steps >= 0 && (g.prefetch_steps == 0 || g.step / 2 <= 128),
           "Mxfp4Gemv::prefetch_steps is at least 0, with steps of at most 128 bytes a row");
  MT_CHECK(g.stages == 0 || (g.stages >= 2 && g.stages <= kMaxLoadStages && g.words && !g.x_ahead),
           "Mxfp4Gemv::stages is 0, or 2 to 8 with words and without x_ahead");
  MT_CHECK(g.stage_steps == 1 ||
               (g.stages != 0 && g.stage_steps >= 2 && g.stage_steps <= kMxfp4MaxStageSteps &&
                g.k / g.step % g.stage_steps == 0),
           "Mxfp4Gemv::stage_steps is 1, or 2 to 4 dividing the K steps, with stages");
  MT_CHECK(!g.codes_ahead || g.stages != 0,
           "Mxfp4Gemv::codes_ahead is for staged loops: set stages");
}

// `loop(bias)`'s result (a GEMV's f32 sums [g.rows, g.token_rows]) at g.scale_bias, multiplied
// back; the exact decode's where that is not finite. A scale code above 128 - g.scale_bias decodes
// to infinity (NaN for zeros) under the bias, so every sum of its row is then infinite or NaN: the
// biased loop itself tells whether a task's codes allowed it, with no pass over the scales before
// it (which cost each task a memory round trip). Only the real tokens' sums are looked at (rows of
// x past g.tokens may hold anything). A task whose exact sums are not finite (a NaN scale, x not
// finite) also runs twice, and gets the exact decode's.
Value with_scale_bias(const Mxfp4Gemv& g, const std::function<Value(int)>& loop) {
  if (g.scale_bias == 0) return loop(0);
  auto sums = loop(g.scale_bias);
  auto real = row(arange(0, g.token_rows) < g.tokens);
  auto finite = abs(sums) <= std::numeric_limits<float>::max();
  auto overflowed = max(where(real & !finite, 1, 0));
  return if_(
      overflowed == 0, [&] { return sums * std::ldexp(1.0f, -g.scale_bias); },
      [&] { return loop(0); });
}

}  // namespace

Value mxfp4_gemv_rows(const Mxfp4Gemv& g, const Value& rows, const Value& row_ok) {
  check_shape(g);
  const int64_t steps = g.k / g.step, step_bytes = g.step / 2;
  // Software-pipelined: a step's bytes and scales come in as carried values, loaded `ahead` steps
  // before, so that each thread has that many 16-byte loads in flight while it decodes. Past the
  // last step the loads repeat the last step (an L2 hit, where a mask would be a branch).
  auto zero = zeros({g.rows, g.token_rows}, f32);
  if (g.stages > 0 && (g.stage_steps > 1 || g.codes_ahead)) {
    // Each iteration's stage_steps steps of words and x come from shared memory, copied together
    // stages - 1 iterations before; its dots go into two accumulators by turns. With codes_ahead,
    // the iteration's codes come in carried from the one before (the last iteration loads its own
    // again: an L1 hit).
    const int sub = g.stage_steps, iterations = static_cast<int>(steps) / sub;
    auto codes_of = [&](const Value& iteration) {
      std::vector<Value> codes;
      auto at = minimum(iteration, iterations - 1);
      for (int s = 0; s < sub; ++s) {
        codes.push_back(
            load_word_codes(g, rows, row_ok, (at * sub + s) * static_cast<int>(step_bytes)));
      }
      return codes;
    };
    auto staged = [&](int bias) {
      std::vector<Value> init{zero, zero};
      if (g.codes_ahead) {
        for (const Value& c : codes_of(full({}, 0, i32))) init.push_back(c);
      }
      std::vector<Value> out =
          range_carrying(0, iterations, 1, init, [&](Value i, const std::vector<Value>& carried) {
            std::array<Value, 2> acc{carried[0], carried[1]};
            std::vector<Value> next;
            if (g.codes_ahead) next = codes_of(i + 1);
            for (int s = 0; s < sub; ++s) {
              auto step = i * sub + s;
              auto byte0 = step * static_cast<int>(step_bytes);
              Mxfp4Packed p{
                  .bytes = load_words(g, rows, row_ok, byte0),
                  .codes = g.codes_ahead ? carried[2 + s] : load_word_codes(g, rows, row_ok, byte0),
                  .x = Value()};
              if (g.prefetch_steps > 0) {
                prefetch_step(g, rows, row_ok,
                              minimum(step + g.prefetch_steps, static_cast<int>(steps - 1)) *
                                  static_cast<int>(step_bytes));
              }
              acc = accumulate_step(g, g.x_pairs, byte0, acc, p, s % 2, bias);
            }
            std::vector<Value> result{acc[0], acc[1]};
            result.insert(result.end(), next.begin(), next.end());
            return result;
          });
      return out[0] + out[1];
    };
    return trans(with_scale_bias(g, staged));
  }
  if (g.stages > 0) {
    // Each step's words and x come from shared memory, copied stages - 1 steps before.
    auto staged = [&](int bias) {
      return range(0, static_cast<int>(steps), 1, zero, [&](Value i, Value acc) {
        auto byte0 = i * static_cast<int>(step_bytes);
        Mxfp4Packed p = mxfp4_load(g, rows, row_ok, byte0);
        if (g.prefetch_steps > 0) {
          prefetch_step(g, rows, row_ok,
                        minimum(i + g.prefetch_steps, static_cast<int>(steps - 1)) *
                            static_cast<int>(step_bytes));
        }
        return accumulate_step(g, g.x_pairs, byte0, {acc, acc}, p, 0, bias)[0];
      });
    };
    return trans(with_scale_bias(g, staged));
  }
  auto loop = [&](int bias) {
    auto carried = pipelined_steps(
        g.ahead, full({}, static_cast<int32_t>(steps), i32), steps % (g.ahead + 1) == 0,
        {zero, zero},
        [&](const Value& i) {
          auto byte0 = minimum(i, static_cast<int>(steps - 1)) * static_cast<int>(step_bytes);
          Mxfp4Packed p = mxfp4_load(g, rows, row_ok, byte0);
          if (g.prefetch_steps > 0) {
            prefetch_step(g, rows, row_ok,
                          minimum(i + g.prefetch_steps, static_cast<int>(steps - 1)) *
                              static_cast<int>(step_bytes));
          }
          if (g.x_ahead) p.x = load_x(g, g.x_pairs, byte0);
          return carried_values(p);
        },
        [&](const Value& i, int s, const std::vector<Value>& acc,
            const std::vector<Value>& loaded) {
          auto [low, high] = accumulate_step(g, g.x_pairs, i * static_cast<int>(step_bytes),
                                             {acc[0], acc[1]}, carried_packed(loaded), s % 2, bias);
          return std::vector<Value>{low, high};
        });
    return carried[0] + carried[1];
  };
  return trans(with_scale_bias(g, loop));
}

Value mxfp4_gemv_sum(const Mxfp4Gemv& g, const Value& rows, const Value& row_ok, const Value& count,
                     const std::function<Mxfp4Segment(const Value&)>& segment,
                     const std::function<Value(const Value&)>& coef) {
  check_shape(g);
  MT_CHECK(g.stage_steps == 1, "mxfp4_gemv_sum takes Mxfp4Gemv::stage_steps 1");
  const int64_t steps = g.k / g.step, step_bytes = g.step / 2;
  // Step i of the whole sum: segment i / steps at packed byte (i % steps) * step_bytes. Past the
  // last step (the loads ahead of the end): the last step again.
  auto load_step = [&](const Value& i) {
    auto at = minimum(i, count * steps - 1);
    Mxfp4Segment s = segment(at / steps);
    Mxfp4Gemv gs = g;
    gs.packed = s.packed;
    gs.scales = s.scales;
    Mxfp4Packed p =
        g.stages > 0 && g.codes_ahead
            ? Mxfp4Packed{.bytes = load_words(gs, rows, row_ok, at % steps * step_bytes),
                          .codes = Value(),
                          .x = Value()}
            : mxfp4_load(gs, rows, row_ok, at % steps * step_bytes);
    if (g.x_ahead) p.x = load_x(g, s.x_pairs, at % steps * step_bytes);
    if (g.prefetch_steps > 0) {
      auto later = minimum(i + g.prefetch_steps, count * steps - 1);
      Mxfp4Gemv gl = g;
      gl.packed = segment(later / steps).packed;
      prefetch_step(gl, rows, row_ok, later % steps * step_bytes);
    }
    return p;
  };
  // One loop over every segment's steps, g.ahead steps' loads in flight across segment boundaries
  // (a loop per segment would wait for each segment's first loads). A segment's last step adds its
  // sum, times its coefficients, to the total and restarts the accumulators.
  auto zero = zeros({g.rows, g.token_rows}, f32);
  if (g.stages > 0 && g.codes_ahead) {
    // The staged loop below with each step's codes loaded by the step before and carried in
    // registers (the last step loads its own again).
    auto codes_of = [&](const Value& i) {
      auto at = minimum(i, count * steps - 1);
      Mxfp4Gemv gs = g;
      gs.scales = segment(at / steps).scales;
      return load_word_codes(gs, rows, row_ok, at % steps * step_bytes);
    };
    auto staged = [&](int bias) {
      std::vector<Value> out =
          range_carrying(0, count * steps, 1, {zero, zero, codes_of(full({}, 0, i32))},
                         [&](Value i, const std::vector<Value>& carried) {
                           const Value &total = carried[0], &acc = carried[1];
                           auto next = codes_of(i + 1);
                           auto j = i / steps;
                           Mxfp4Packed p = load_step(i);
                           p.codes = carried[2];
                           auto sum = accumulate_step(g, segment(j).x_pairs, i % steps * step_bytes,
                                                      {acc, acc}, p, 0, bias)[0];
                           auto [total_to, acc_to] = if_(
                               i % steps == steps - 1,
                               [&] {
                                 return std::array{total + sum * row(coef(j)), zero};
                               },
                               [&] {
                                 return std::array{total, sum};
                               });
                           return std::vector<Value>{total_to, acc_to, next};
                         });
      return out[0];
    };
    return trans(with_scale_bias(g, staged));
  }
  if (g.stages > 0) {
    // The same loop with each step's words and x copied through shared memory stages - 1 steps
    // before (segment(j) must then compute its pointers from j and values defined before the loop).
    auto staged = [&](int bias) {
      auto [total, acc] =
          range(0, count * steps, 1, zero, zero, [&](Value i, Value total, Value acc) {
            auto j = i / steps;
            auto sum = accumulate_step(g, segment(j).x_pairs, i % steps * step_bytes, {acc, acc},
                                       load_step(i), 0, bias)[0];
            return if_(
                i % steps == steps - 1,
                [&] {
                  return std::array{total + sum * row(coef(j)), zero};
                },
                [&] {
                  return std::array{total, sum};
                });
          });
      return total;
    };
    return trans(with_scale_bias(g, staged));
  }
  auto loop = [&](int bias) {
    auto carried = pipelined_steps(
        g.ahead, count * steps, false, {zero, zero, zero},
        [&](const Value& i) { return carried_values(load_step(i)); },
        [&](const Value& i, int s, const std::vector<Value>& acc,
            const std::vector<Value>& loaded) {
          const Value& total = acc[0];
          auto j = i / steps;
          auto [low, high] = accumulate_step(g, segment(j).x_pairs, i % steps * step_bytes,
                                             {acc[1], acc[2]}, carried_packed(loaded), s % 2, bias);
          auto [sum_to, low_to, high_to] = if_(
              i % steps == steps - 1,
              [&] {
                return std::array{total + (low + high) * row(coef(j)), zero, zero};
              },
              [&] {
                return std::array{total, low, high};
              });
          return std::vector<Value>{sum_to, low_to, high_to};
        });
    return carried[0];
  };
  // Any segment's code above the bias's bound makes the whole sum take the exact decode.
  return trans(with_scale_bias(g, loop));
}

void mxfp4_gemv_tasks(const Mxfp4Gemv& g, const Value& count,
                      const std::function<Mxfp4Task(const Value&)>& task,
                      const std::function<void(const Value&, const Value&)>& done) {
  check_shape(g);
  MT_CHECK(g.stages != 0 && g.prefetch_steps == 0,
           "mxfp4_gemv_tasks is a staged loop: Mxfp4Gemv::stages 2 to 8, prefetch_steps 0");
  const int64_t steps = g.k / g.step, step_bytes = g.step / 2;
  const int sub = g.stage_steps, iterations = static_cast<int>(steps) / sub;
  // g on task t's pointers.
  auto on = [&](const Mxfp4Task& t) {
    Mxfp4Gemv gt = g;
    gt.packed = t.packed;
    gt.scales = t.scales;
    gt.x_pairs = t.x_pairs;
    return gt;
  };
  // Iteration i of the whole loop: task i / iterations, its iteration i % iterations.
  auto total = maximum(count, 0) * iterations;
  // With codes_ahead, iteration i's codes (past the last: the last's again, an L1 hit).
  auto codes_of = [&](const Value& i) {
    auto at = minimum(i, maximum(total - 1, 0));
    Mxfp4Task t = task(at / iterations);
    std::vector<Value> codes;
    for (int s = 0; s < sub; ++s) {
      codes.push_back(load_word_codes(on(t), t.rows, t.row_ok,
                                      (at % iterations * sub + s) * static_cast<int>(step_bytes)));
    }
    return codes;
  };
  auto zero = zeros({g.rows, g.token_rows}, f32);
  std::vector<Value> init{zero, zero};
  if (g.codes_ahead) {
    for (const Value& c : codes_of(full({}, 0, i32))) init.push_back(c);
  }
  range_carrying(0, total, 1, init, [&](Value i, const std::vector<Value>& carried) {
    auto j = i / iterations, it = i % iterations;
    Mxfp4Task t = task(j);
    const Mxfp4Gemv gt = on(t);
    std::array<Value, 2> acc{carried[0], carried[1]};
    std::vector<Value> next;
    if (g.codes_ahead) next = codes_of(i + 1);
    for (int s = 0; s < sub; ++s) {
      auto byte0 = (it * sub + s) * static_cast<int>(step_bytes);
      Mxfp4Packed p{
          .bytes = load_words(gt, t.rows, t.row_ok, byte0),
          .codes = g.codes_ahead ? carried[2 + s] : load_word_codes(gt, t.rows, t.row_ok, byte0),
          .x = Value()};
      acc = accumulate_step(gt, t.x_pairs, byte0, acc, p, s % 2, g.scale_bias);
    }
    // A task's last iteration hands its sums on (multiplied back from the bias, or the exact
    // decode's where its codes did not allow the bias: with_scale_bias's rule) and restarts the
    // accumulators for the next task.
    auto [to0, to1] = if_(
        it == iterations - 1,
        [&] {
          auto sums = acc[0] + acc[1];
          Value result;
          if (g.scale_bias == 0) {
            result = trans(sums);
          } else {
            auto real = row(arange(0, g.token_rows) < g.tokens);
            auto finite = abs(sums) <= std::numeric_limits<float>::max();
            auto overflowed = max(where(real & !finite, 1, 0));
            result = if_(
                overflowed == 0, [&] { return trans(sums * std::ldexp(1.0f, -g.scale_bias)); },
                [&] {
                  Mxfp4Gemv exact = gt;
                  exact.scale_bias = 0;
                  exact.stages = 0;
                  exact.stage_steps = 1;
                  exact.codes_ahead = false;
                  return mxfp4_gemv_rows(exact, t.rows, t.row_ok);
                });
          }
          done(j, result);
          return std::array{zero, zero};
        },
        [&] { return acc; });
    std::vector<Value> result{to0, to1};
    result.insert(result.end(), next.begin(), next.end());
    return result;
  });
}

Value mxfp4_gemv_task(const Mxfp4Gemv& g, const Value& task, int64_t n) {
  auto rows = task * g.rows + arange(0, g.rows);
  return mxfp4_gemv_rows(g, rows, rows < n);
}

Program mxfp4_gemv_program(int64_t n, int64_t k, int tokens, int num_warps, int step, int ahead,
                           bool pairs, bool x_padded, int token_rows, bool x_ahead, bool words,
                           int scale_bias, int prefetch_steps, int l2_fetch, int stages,
                           Mxfp4Placement placement, int stage_steps, bool codes_ahead,
                           bool task_loop) {
  Builder b(absl::StrCat(pairs ? (words ? "mxfp4_gemv_words" : "mxfp4_gemv_pairs") : "mxfp4_gemv",
                         x_padded ? "_xp" : "", x_ahead ? "_xa" : "", "_n", token_rows,
                         scale_bias != 0 ? absl::StrCat("_sb", -scale_bias) : "",
                         prefetch_steps != 0 ? absl::StrCat("_pf", prefetch_steps) : "",
                         l2_fetch != 0 ? absl::StrCat("_l2f", l2_fetch) : "",
                         stages != 0 ? absl::StrCat("_st", stages) : "",
                         stage_steps != 1 ? absl::StrCat("_ss", stage_steps) : "",
                         codes_ahead ? "_ca" : "",
                         placement == Mxfp4Placement::kShifts ? "_ps" : "", task_loop ? "_tl" : ""),
            {.num_warps = num_warps});
  Mxfp4Gemv g{.packed = b.arg("packed", ptr(u8)),
              .scales = b.arg("scales", ptr(u8)),
              .x_pairs = b.arg("x", ptr(i32)),
              .k = k,
              .tokens = tokens,
              .token_rows = token_rows,
              .step = step,
              .ahead = ahead,
              .x_padded = x_padded,
              .x_ahead = x_ahead,
              .pairs = pairs,
              .words = words,
              .scale_bias = scale_bias,
              .placement = placement,
              .prefetch_steps = prefetch_steps,
              .l2_fetch = l2_fetch,
              .stages = stages,
              .stage_steps = stage_steps,
              .codes_ahead = codes_ahead};
  auto out = b.arg("out", ptr(f32));
  const int tasks = static_cast<int>((n + g.rows - 1) / g.rows);
  auto store_task = [&](const Value& rows, const Value& acc) {
    store(out + col(arange(0, token_rows)) * n + row(rows), acc, row(rows < n));
  };
  if (task_loop) {
    // This program's tasks program_id + j num_programs as one loop.
    auto rows_of = [&](const Value& j) {
      return (program_id(0) + j * num_programs(0)) * g.rows + arange(0, g.rows);
    };
    mxfp4_gemv_tasks(
        g, (tasks - program_id(0) + num_programs(0) - 1) / num_programs(0),
        [&](const Value& j) {
          auto rows = rows_of(j);
          return Mxfp4Task{.rows = rows,
                           .row_ok = rows < n,
                           .packed = g.packed,
                           .scales = g.scales,
                           .x_pairs = g.x_pairs};
        },
        [&](const Value& j, const Value& acc) { store_task(rows_of(j), acc); });
    return b.finish();
  }
  range(program_id(0), tasks, num_programs(0), [&](Value task) {
    auto rows = task * g.rows + arange(0, g.rows);
    store(out + col(arange(0, token_rows)) * n + row(rows), mxfp4_gemv_task(g, task, n),
          row(rows < n));
  });
  return b.finish();
}

}  // namespace monotile::kernels::k3
