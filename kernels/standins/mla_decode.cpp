// The MLA decode kernels over a latent cache; see mla_decode.h.
#include "kernels/standins/mla_decode.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"

namespace monotile::kernels::standins {

using namespace dsl;

namespace {

std::string suffix(const MlaShape& s) {
  return absl::StrCat("_h", s.hidden, "_nh", s.heads, "_ql", s.q_lora, "_kl", s.kv_lora, "_n",
                      s.nope, "_r", s.rope, "_v", s.v, "_q", s.q, s.gate ? "_g" : "");
}

// Columns of kv_b's rows a program takes at once (kv_lora is a power of two or a multiple of 16).
int lora_block(const MlaShape& s) {
  return std::min(s.kv_lora, 64);
}

}  // namespace

MlaShape mla_shape(const model::ModelConfig& c, int heads, int q) {
  return {.hidden = static_cast<int>(c.hidden_size),
          .heads = heads,
          .q_lora = static_cast<int>(c.q_lora_rank),
          .kv_lora = static_cast<int>(c.kv_lora_rank),
          .nope = static_cast<int>(c.qk_nope_head_dim),
          .rope = static_cast<int>(c.qk_rope_head_dim),
          .v = static_cast<int>(c.v_head_dim),
          .q = q,
          .gate = c.mla_use_output_gate,
          .eps = static_cast<float>(c.rms_norm_eps)};
}

Grid mla_grid(const MlaShape& s, int tokens) {
  return {.x = s.heads, .y = tokens, .z = 1};
}

Program mla_cache_append_program(const MlaShape& s) {
  Builder b("standin_mla_cache_append" + suffix(s), {.num_warps = 4});
  auto fused = b.arg("fused", ptr(bf16)), kv_norm = b.arg("kv_norm", ptr(bf16));
  auto slots = b.arg("slots", ptr(i32)), context = b.arg("context", ptr(i32));
  auto cache = b.arg("cache", ptr(bf16)), slot_stride = b.arg("cache_slot_stride", i64);
  auto token = program_id(1);
  auto request = token / s.q, j = token % s.q;
  auto slot = load(slots + request);
  auto valid = slot >= 0;
  auto entry = where(valid, slot, 0).to(i64) * slot_stride +
               (load(context + request) + j).to(i64) * s.entry();
  auto row = fused + token.to(i64) * s.fused_rows();
  auto lora = arange(0, s.kv_lora), pe = arange(0, s.rope);
  auto c = load(row + s.q_lora + lora).to(f32);
  auto rstd = rsqrt(sum(c * c) / float(s.kv_lora) + s.eps);
  store(cache + entry + lora, (c * rstd * load(kv_norm + lora).to(f32)).to(bf16), valid);
  store(cache + entry + s.kv_lora + pe, load(row + s.q_lora + s.kv_lora + pe), valid);
  return b.finish();
}

Program mla_absorb_program(const MlaShape& s) {
  Builder b("standin_mla_absorb" + suffix(s), {.num_warps = 4});
  auto q_heads = b.arg("q_heads", ptr(bf16)), kv_b = b.arg("kv_b", ptr(bf16)),
       query = b.arg("query", ptr(bf16));
  auto head = program_id(0).to(i64), token = program_id(1).to(i64);
  auto q_row = q_heads + (token * s.heads + head) * s.qk();
  auto out = query + (token * s.heads + head) * s.entry();
  auto nope = arange(0, s.nope);
  auto q_nope = load(q_row + nope).to(f32);
  const int block = lora_block(s);
  for (int l0 = 0; l0 < s.kv_lora; l0 += block) {
    auto ls = l0 + arange(0, block);
    auto w = load(kv_b + (head * (s.nope + s.v) + col(nope).to(i64)) * s.kv_lora + row(ls)).to(f32);
    store(out + ls, sum(col(q_nope) * w, 0).to(bf16));
  }
  auto pe = arange(0, s.rope);
  store(out + s.kv_lora + pe, load(q_row + s.nope + pe));
  return b.finish();
}

Program mla_attention_program(const MlaShape& s) {
  constexpr int kBlockPositions = 16;
  Builder b("standin_mla_attention" + suffix(s), {.num_warps = 4});
  auto query = b.arg("query", ptr(bf16)), slots = b.arg("slots", ptr(i32)),
       context = b.arg("context", ptr(i32));
  auto cache = b.arg("cache", ptr(bf16)), slot_stride = b.arg("cache_slot_stride", i64);
  auto latent = b.arg("latent", ptr(bf16));
  auto head = program_id(0).to(i64), token = program_id(1);
  auto request = token / s.q, j = token % s.q;
  auto slot = load(slots + request);
  auto valid = slot >= 0;
  auto visible = where(valid, load(context + request) + j + 1, 0);
  auto sequence = cache + where(valid, slot, 0).to(i64) * slot_stride;
  auto lora = arange(0, s.kv_lora), pe = arange(0, s.rope);
  auto q_row = query + (token.to(i64) * s.heads + head) * s.entry();
  auto q_lora = load(q_row + lora).to(f32), q_pe = load(q_row + s.kv_lora + pe).to(f32);
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.qk()));
  const float kLow = -1e30f;  // below every score; exp(kLow - m) is 0
  auto [top, total, acc] =
      range(0, visible, kBlockPositions, full({}, kLow, f32), full({}, 0.0f, f32),
            zeros({s.kv_lora}, f32), [&](Value p0, Value top, Value total, Value acc) {
              auto ps = p0 + arange(0, kBlockPositions);
              auto seen = ps < visible;
              auto at = sequence + col(ps).to(i64) * s.entry();
              auto c_kv = load(at + row(lora), col(seen), 0.0f).to(f32);
              auto k_pe = load(at + s.kv_lora + row(pe), col(seen), 0.0f).to(f32);
              auto scores = (sum(c_kv * row(q_lora), 1) + sum(k_pe * row(q_pe), 1)) * scale;
              scores = where(seen, scores, kLow);
              auto next = maximum(top, max(scores));
              auto alpha = exp(top - next);
              auto weights = exp(scores - next);
              return std::array{next, total * alpha + sum(weights),
                                acc * alpha + sum(col(weights) * c_kv, 0)};
            });
  (void)top;
  auto out = where(valid, acc / maximum(total, 1e-30f), 0.0f);
  store(latent + (token.to(i64) * s.heads + head) * s.kv_lora + lora, out.to(bf16));
  return b.finish();
}

Program mla_output_program(const MlaShape& s) {
  Builder b("standin_mla_output" + suffix(s), {.num_warps = 4});
  auto latent = b.arg("latent", ptr(bf16)), kv_b = b.arg("kv_b", ptr(bf16)),
       fused = b.arg("fused", ptr(bf16));
  auto slots = b.arg("slots", ptr(i32)), core = b.arg("core", ptr(bf16));
  auto head = program_id(0).to(i64), token = program_id(1);
  auto valid = load(slots + token / s.q) >= 0;
  auto vs = arange(0, s.v);
  auto lat_row = latent + (token.to(i64) * s.heads + head) * s.kv_lora;
  auto w_rows = kv_b + (head * (s.nope + s.v) + s.nope + col(vs).to(i64)) * s.kv_lora;
  const int block = lora_block(s);
  Value acc = zeros({s.v}, f32);
  for (int l0 = 0; l0 < s.kv_lora; l0 += block) {
    auto ls = l0 + arange(0, block);
    auto lat = load(lat_row + ls).to(f32);
    acc = acc + sum(load(w_rows + row(ls)).to(f32) * row(lat), 1);
  }
  Value value = acc.to(bf16);
  if (s.gate) {
    auto gate =
        load(fused + token.to(i64) * s.fused_rows() + s.q_lora + s.entry() + head * s.v + vs)
            .to(f32);
    value = (value.to(f32) * sigmoid(gate)).to(bf16);
  }
  store(core + token.to(i64) * (s.heads * s.v) + head * s.v + vs,
        where(valid, value, full_like(value, 0)));
  return b.finish();
}

}  // namespace monotile::kernels::standins
