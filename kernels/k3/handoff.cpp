#include "kernels/k3/handoff.h"

#include <array>

#include "dsl/dsl.h"
#include "kernels/k3/build_support.h"
#include "kernels/k3/k1.h"
#include "support/check.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

// The first give-up of this program: its record (if still empty), then the alarm, then FAILED, in
// that order at system scope, so that a host seeing FAILED also sees the record.
void record_give_up(const HandoffContext& c, int32_t region, const Value& index, const Value& seen) {
  auto record = c.health + (program_id(0) + 1) * kHealthRecordWords;
  if_(load(record, {.order = Order::relaxed, .scope = Scope::gpu}) == 0, [&] {  // one thread reads: a uniform branch
    const std::array<Value, kHealthRecordWords> words = {
        full({}, 1, i32), full({}, region, i32), index, c.tag, seen, program_id(0),
        (global_timer() & 0x7fffffff).to(i32), full({}, 0, i32)};
    for (int i = 0; i < kHealthRecordWords; ++i) store(record + i, words[i], {.scope = Scope::system});
  });
  fence(Order::release, Scope::system);
  store_release(c.alarm, 1, Scope::system);
  store_release(c.health, 1, Scope::system);
}

// This program's earlier stores made visible, then its arrival counted: its number among the
// launch's arrivals. `& (span - 1)` is that number in two's complement, wrapped or not (a signed %
// would turn negative past the wrap); the counter is a multiple of span when a launch starts.
Value arrival_number(const Value& counter, int span) {
  fence(Order::release, Scope::gpu);
  barrier();
  return atomic_add(counter, 1, Scope::gpu, Order::acq_rel) & (span - 1);
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

int arrival_span(int arrivals) { return static_cast<int>(pow2_at_least(arrivals)); }

Value count_arrival(const Value& counter, int arrivals, int span) {
  if (span == 0) span = arrival_span(arrivals);
  MT_CHECK(span >= arrivals && (span & (span - 1)) == 0, "an arrival span is a power of two >= the arrivals");
  auto last = arrival_number(counter, span) == arrivals - 1;
  if (span > arrivals) {
    if_(last, [&] { atomic_add(counter, span - arrivals, Scope::gpu, Order::relaxed); });
  }
  return last;
}

Value count_arrival(const Value& counter, const Value& arrivals, int span) {
  MT_CHECK(span > 0 && (span & (span - 1)) == 0, "an arrival span is a power of two");
  auto last = arrival_number(counter, span) == arrivals - 1;
  if_(last & (arrivals < span), [&] { atomic_add(counter, span - arrivals, Scope::gpu, Order::relaxed); });
  return last;
}

void arrive(const Value& counter, int arrivals, const Value& flag, const HandoffContext& context, int span) {
  // The last arrival's acquire makes every earlier share happen before its release of the flag.
  if_(count_arrival(counter, arrivals, span), [&] { store_release(flag, context.tag, Scope::gpu); });
}

void wait_flag(const Value& flag, int32_t region, const Value& index, const HandoffContext& c, MemScope scope) {
  // Scalar ordered loads are made by one thread and shared, so every thread takes the same branch
  // (the branches hold barriers): a plain load per thread could see the word change in between.
  // The wait re-reads FAILED on every iteration: once any program of the rank has given up, every
  // wait ends at once without a record (the first give-up's record is the cause; a wait behind it
  // would only add its own full bound and a record of the consequence). A timeout records the value
  // the wait's last load saw: a re-read could see a tag that came after the wait had given up.
  if_(load_acquire(flag, scope) != c.tag, [&] {
    const Waited waited = wait_until(flag, Cmp::eq, c.tag, c.wait_ns, scope, {.abort_if_nonzero = c.health});
    if_(waited.timed_out(), [&] { record_give_up(c, region, index, waited.seen); });
  });
  // The acquire ordered the waiting thread; the barrier extends that to the program's threads.
  barrier();
}

}  // namespace monotile::kernels::k3
