// The sample programs. They are written the way kernels are (dsl/dsl.h only) and exercise every
// builder entry point at least once.
#include "dsl/test_programs.h"

#include <cmath>

#include "dsl/dsl.h"

namespace monotile::dsl::testing {

Program rms_norm(int hidden, float eps) {
  Builder b("rms_norm", {.num_warps = 4});
  auto x = b.arg("x", ptr(bf16)), w = b.arg("w", ptr(bf16)), y = b.arg("y", ptr(bf16));
  auto row = program_id(0);
  auto cols = arange(0, hidden);
  auto v = load(x + row * hidden + cols).to(f32);
  auto rstd = rsqrt(sum(v * v) / hidden + eps);
  store(y + row * hidden + cols, (v * rstd * load(w + cols).to(f32)).to(bf16));
  return b.finish();
}

Program gemv(int m, int n, int k, int block_n, int block_k, int split_k) {
  Builder b("gemv", {.num_warps = 4});
  auto x = b.arg("x", ptr(bf16)), weight = b.arg("w", ptr(bf16)), y = b.arg("y_f32", ptr(f32));
  auto n0 = program_id(0) * block_n, part = program_id(1);
  auto rows = n0 + arange(0, block_n);
  auto acc = zeros({m, block_n}, f32);
  auto k_per = k / split_k;
  acc = range(part * k_per, (part + 1) * k_per, block_k, acc, [&](Value k0, Value acc) {
    auto ks = k0 + arange(0, block_k);
    auto w = load(weight + col(rows) * k + row(ks));
    auto a = load(x + col(arange(0, m)) * k + row(ks));
    return dot(a, trans(w), acc);
  });
  atomic_add(y + col(arange(0, m)) * n + row(rows), acc, Scope::gpu, Order::relaxed);
  return b.finish();
}

namespace {
Value l2norm(const Value& v) { return v * rsqrt(sum(v * v) + 1e-6f); }
}  // namespace

Program kda_verify(int heads, int q, int block_v) {
  constexpr int D = 128;
  Builder b("kda_verify", {.num_warps = 4});
  auto qp = b.arg("q", ptr(bf16)), kp = b.arg("k", ptr(bf16)), vp = b.arg("v", ptr(bf16));
  auto gp = b.arg("g", ptr(bf16)), bp = b.arg("beta", ptr(bf16));
  auto a_log = b.arg("a_log", ptr(f32)), dt_bias = b.arg("dt_bias", ptr(f32));
  auto state = b.arg("state", ptr(f32)), slot_stride = b.arg("slot_stride", i64);
  auto slots = b.arg("state_indices", ptr(i32)), accepted = b.arg("num_accepted", ptr(i32));
  auto out = b.arg("o", ptr(bf16));
  int nv = D / block_v;
  auto pid = program_id(0);
  auto n = pid / (heads * nv), h = pid / nv % heads, vb = pid % nv;
  auto kk = arange(0, D), vv = vb * block_v + arange(0, block_v);
  auto first = load(slots + n * q + load(accepted + n) - 1);
  auto has_state = first > 0;
  auto tile = col(h * D + vv) * D + row(kk);
  auto S = load(state + first * slot_stride + tile, has_state, 0.0f);
  auto decay_scale = exp(load(a_log + h));
  for (int t = 0; t < q; ++t) {
    auto tok = (n * q + t) * heads + h;
    auto qt = l2norm(load(qp + tok * D + kk).to(f32)) * (1.0f / std::sqrt(float(D)));
    auto kt = l2norm(load(kp + tok * D + kk).to(f32));
    auto vt = load(vp + tok * D + vv).to(f32);
    auto gate = -5.0f * sigmoid(decay_scale * (load(gp + tok * D + kk).to(f32) + load(dt_bias + h * D + kk)));
    S = S * row(exp(gate));
    auto e = (vt - sum(S * row(kt), 1)) * sigmoid(load(bp + tok).to(f32));
    S = S + col(e) * row(kt);
    store(out + tok * D + vv, where(has_state, sum(S * row(qt), 1), 0.0f).to(bf16));
    auto slot = load(slots + n * q + t);
    store(state + slot * slot_stride + tile, S, has_state & (slot > 0));
  }
  return b.finish();
}

namespace {

Program softmax_rows(int n) {
  Builder b("softmax", {.num_warps = 8});
  auto x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32)), cols_arg = b.arg("cols", i32);
  auto cols = arange(0, n);
  auto mask = cols < cols_arg;
  auto base = program_id(0) * cols_arg;
  auto v = load(x + base + cols, mask, -INFINITY);
  auto e = exp(v - max(v));
  store(y + base + cols, e / sum(e), mask);
  return b.finish();
}

Program router_topk() {
  Builder b("router_topk");
  auto logits = b.arg("logits", ptr(f32)), ids = b.arg("ids", ptr(i32)), weights = b.arg("w", ptr(f32));
  auto experts = arange(0, 896);
  auto scores = sigmoid(load(logits + program_id(0) * 896 + experts));
  auto [top, index] = topk(scores, 16);
  auto normalized = top / sum(top);
  store(ids + program_id(0) * 16 + arange(0, 16), index);
  store(weights + program_id(0) * 16 + arange(0, 16), normalized);
  return b.finish();
}

Program persistent_tickets(int stages) {
  Builder b("persistent", {.num_warps = 4});
  auto counter = b.arg("counter", ptr(i32)), flags = b.arg("flags", ptr(i32));
  auto data = b.arg("data", ptr(f32)), epoch = b.arg("epoch", i32), health = b.arg("health", ptr(u32));
  auto total = b.arg("tiles", i32);
  auto first = atomic_add(counter, 1, Scope::gpu, Order::acq_rel);
  auto [ticket, done] = while_(first, 0, [&](Value ticket, Value) { return ticket < total; },
                               [&](Value ticket, Value done) {
    auto stage = ticket % stages;
    auto ready = if_(stage > 0, [&] {
      auto timed_out = wait_until(flags + ticket - 1, Cmp::ge, epoch, 2'000'000'000, Scope::gpu);
      if_(timed_out, [&] { atomic_or(health, 1u, Scope::system, Order::relaxed); });
      return !timed_out;
    }, [&] { return zeros({}, i1) == 0; });
    auto offs = ticket * 64 + arange(0, 64);
    auto v = load(data + offs, {.cache = Cache::global});
    store(data + offs, where(ready, v * 2.0f, v));
    fence(Order::release, Scope::gpu);
    store_release(flags + ticket, epoch, Scope::gpu);
    auto next = atomic_add(counter, 1, Scope::gpu, Order::acq_rel);
    return std::array{next, done + 1};
  });
  auto start = global_timer();
  barrier();
  print("tiles done", {done, ticket, global_timer() - start});
  device_assert(done >= 0, "negative count");
  return b.finish();
}

Program shapes_and_bits() {
  Builder b("shapes_and_bits");
  auto p = b.arg("p", ptr(u32)), out = b.arg("out", ptr(f32)), w4 = b.arg("w4", ptr(mxfp4));
  auto scales = b.arg("scales", ptr(u8)), o16 = b.arg("o16", ptr(bf16));
  auto r = arange(0, 32);
  auto words = load(p + r);
  auto mixed = ((words << 3u) ^ (words >> 1u)) | (~words & 0xffu);
  auto hi = umulhi(mixed, words);
  auto grid = reshape(broadcast_to(row(r), {4, 32}), {8, 16});
  auto [lo_half, hi_half] = split(reshape(grid, {8, 8, 2}));
  auto joined = join(lo_half, hi_half);
  auto stacked = cat(trans(reshape(joined, {8, 16})), expand_dims(arange(0, 8), 0) + zeros({16, 8}, i32), 0);
  auto floats = (stacked.to(f32) + col(hi.to(f32).bitcast(i32).to(f32))).bitcast(u32).bitcast(f32);
  auto m = clamp(floats, -1.0f, 1.0f);
  auto math = fma(abs(m), sqrt(abs(m)), exp2(m)) + log(abs(m) + 1) + log2(abs(m) + 2) + sin(m) * cos(m) +
              tanh(m) + softplus(m) + erf(m) + floor(m) + ceil(m) + minimum(m, 0.5f) + maximum(m, -0.5f);
  auto c = cdiv(program_id(1), 3) + num_programs(2);
  auto scan = cumsum(math, 1) + associative_scan(math, 0, [](Value a, Value x) { return maximum(a, x); });
  auto reduced = reduce(scan, 1, [](Value a, Value x) { return a + x; }) + min(scan, 1) +
                 argmin(scan, 1).to(f32) + xor_sum(stacked, 1).to(f32) + argmax(scan, 1).to(f32);
  auto sorted = sort(scan, 0, true);
  auto rows = col(arange(0, 32));
  store(out + rows * 8 * c + row(arange(0, 8)), sorted.values % 3.0f + col(reduced), rows < 12,
        {.cache = Cache::streaming, .evict = Evict::first});
  auto deq = dequant_mxfp4(load(w4 + arange(0, 32)), load(scales + arange(0, 2)), f32);
  store(o16 + arange(0, 64), (deq / 4.0f).to(bf16));
  auto old = atomic_cas(p, 0u, 1u, Scope::block, Order::acquire);
  atomic_xchg(p + 1, old, Scope::gpu, Order::release);
  atomic_max(p + 2, old, Scope::gpu, Order::relaxed, old > 3u);
  atomic_min(p + 3, old, Scope::gpu, Order::relaxed);
  atomic_and(p + 4, old, Scope::gpu, Order::relaxed);
  atomic_xor(p + 5, old, Scope::gpu, Order::relaxed);
  return b.finish();
}

}  // namespace

const std::vector<NamedProgram>& sample_programs() {
  static const std::vector<NamedProgram> programs = {
      {"rms_norm", [] { return rms_norm(7168, 1e-6f); }},
      {"gemv", [] { return gemv(16, 4096, 7168, 64, 128, 4); }},
      {"kda_verify", [] { return kda_verify(12, 4, 32); }},
      {"softmax", [] { return softmax_rows(1024); }},
      {"router_topk", [] { return router_topk(); }},
      {"persistent", [] { return persistent_tickets(3); }},
      {"shapes_and_bits", [] { return shapes_and_bits(); }},
  };
  return programs;
}

}  // namespace monotile::dsl::testing
