#include "kernels/k3/handoff.h"

#include <array>

#include "dsl/dsl.h"
#include "kernels/k3/k1.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

// The first give-up of this program: its record (if still empty), then the alarm, then FAILED, in
// that order at system scope, so that a host seeing FAILED also sees the record.
void record_give_up(const HandoffContext& c, int32_t region, const Value& index, const Value& seen) {
  auto record = c.health + (program_id(0) + 1) * kHealthRecordWords;
  if_(load(record, {.cache = Cache::volatile_}) == 0, [&] {
    const std::array<Value, kHealthRecordWords> words = {
        full({}, 1, i32), full({}, region, i32), index, c.tag, seen, program_id(0),
        (global_timer() & 0x7fffffff).to(i32), full({}, 0, i32)};
    for (int i = 0; i < kHealthRecordWords; ++i) store(record + i, words[i], {.scope = Scope::system});
  });
  fence(Order::release, Scope::system);
  store_release(c.alarm, 1, Scope::system);
  store_release(c.health, 1, Scope::system);
}

}  // namespace

Value launch_tag(const Value& epoch, const Value& slot) {
  return (load(epoch, {.cache = Cache::volatile_}) & ((1 << 22) - 1)) * 256 + slot + 1;
}

void publish(const Value& flag, const HandoffContext& context) {
  // Every thread's stores are ordered before the barrier; one release store then covers them all.
  fence(Order::release, Scope::gpu);
  barrier();
  store_release(flag, context.tag, Scope::gpu);
}

void arrive(const Value& counter, int arrivals, const Value& flag, const HandoffContext& context) {
  fence(Order::release, Scope::gpu);
  barrier();
  auto before = atomic_add(counter, 1, Scope::gpu, Order::acq_rel);
  // The last arrival's acquire makes every earlier share happen before its release of the flag.
  if_((before + 1) % arrivals == 0, [&] { store_release(flag, context.tag, Scope::gpu); });
}

void wait_flag(const Value& flag, int32_t region, const Value& index, const HandoffContext& c) {
  if_(load(c.health, {.cache = Cache::volatile_}) == 0, [&] {
    auto timed_out = wait_until(flag, Cmp::eq, c.tag, c.wait_ns, Scope::gpu);
    if_(timed_out, [&] { record_give_up(c, region, index, load(flag, {.cache = Cache::volatile_})); });
  });
  // The acquire ordered the waiting thread; the barrier extends that to the program's threads.
  barrier();
}

}  // namespace monotile::kernels::k3
