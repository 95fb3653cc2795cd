// Random tensor contents by an index hash on the device; see random_fill.h.
#include "kernels/standins/random_fill.h"

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"

namespace monotile::kernels::standins {

using namespace dsl;

namespace {

// Chris Wellons' lowbias32: a full-avalanche 32-bit mix, written once for the program (tiles of
// u32) and once for the host (random_fill_uniform), which must agree.
Value mix(Value x) {
  x = x ^ (x >> 16);
  x = x * 0x7feb352du;
  x = x ^ (x >> 15);
  x = x * 0x846ca68bu;
  return x ^ (x >> 16);
}

uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

}  // namespace

Program random_fill_program(ElementType type) {
  const char* name = type == u8 ? "u8" : type == f32 ? "f32" : "bf16";
  Builder b(absl::StrCat("random_fill_", name), {.num_warps = 4});
  auto out = b.arg("out", ptr(type)), n = b.arg("n", i64), key = b.arg("key", u32);
  auto low = b.arg("low", f32), span = b.arg("span", f32);
  auto index = program_id(0).to(i64) * kRandomFillBlock +
               arange(0, static_cast<int>(kRandomFillBlock)).to(i64);
  // The index's two halves, each mixed in, so that tensors past 2^32 elements do not repeat.
  auto lo = index.to(u32), hi = (index >> 32).to(u32);
  auto hash = mix(mix(lo ^ key) ^ (hi * 0x9e3779b9u));
  auto uniform = (hash >> 8).to(f32) * (1.0f / 16777216.0f);
  auto value = low + span * uniform;
  auto inside = index < n;
  if (type == u8) {
    store(out + index, floor(value).to(i32).to(u8), inside);
  } else {
    store(out + index, value.to(type), inside);
  }
  return b.finish();
}

double random_fill_uniform(uint32_t key, int64_t index) {
  const uint32_t lo = static_cast<uint32_t>(index),
                 hi = static_cast<uint32_t>(static_cast<uint64_t>(index) >> 32);
  const uint32_t hash = mix(mix(lo ^ key) ^ (hi * 0x9e3779b9u));
  return static_cast<double>(static_cast<float>(hash >> 8) * (1.0f / 16777216.0f));
}

}  // namespace monotile::kernels::standins
