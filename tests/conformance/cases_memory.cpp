// Memory: masked loads (other value, lanes past the end untouched), masked stores, a multi-instance
// grid with a bound, pointer arithmetic, ordered and hinted accesses, atomics (contended, where
// the result is order-independent, and uncontended, where the old values are checked), the timer,
// and wait_until that succeeds, times out or is aborted by another program.
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "absl/strings/str_cat.h"

#include "dsl/interp/float16.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/kernel_helpers.h"

namespace monotile::conformance {
namespace {

using namespace monotile::dsl;  // NOLINT
using enum ScalarType;

Generator values_for(ScalarType dtype) { return is_float(dtype) ? uniform(-100, 100) : integers(-100, 100); }

// y[0:128] = x[i] for i < 100, else 3: x holds only 100 elements, so a masked lane that touched
// memory would be out of bounds.
Case masked_load_case(ScalarType dtype) {
  Case c;
  c.name = case_name("load_mask_other", dtype, {128});
  c.build = [dtype] {
    Builder b("masked_load");
    Value x = b.arg("x", ptr(ElementType{dtype})), y = b.arg("y", ptr(ElementType{dtype}));
    Value lanes = arange(0, 128);
    store(y + lanes, load(x + lanes, lanes < 100, 3));
    return b.finish();
  };
  c.tensors = {{"x", dtype, {100}, Role::kInput, values_for(dtype), std::nullopt},
               {"y", dtype, {128}, Role::kOutput, nullptr, Tolerance::exact()}};
  c.reference = [](Tensors& t) {
    for (int64_t i = 0; i < 128; ++i) t["y"].set(i, i < 100 ? t["x"].get(i) : 3.0);
  };
  return c;
}

// y[i] = x[i] where x[i] > 0; other elements of y keep what they held.
Case masked_store_case(ScalarType dtype) {
  Case c;
  c.name = case_name("store_mask", dtype, {16, 32});
  c.build = [dtype] {
    Builder b("masked_store");
    Value x = b.arg("x", ptr(ElementType{dtype})), y = b.arg("y", ptr(ElementType{dtype}));
    Value offsets = flat_offsets({16, 32});
    Value v = load(x + offsets);
    store(y + offsets, v, v > 0);
    return b.finish();
  };
  c.tensors = {{"x", dtype, {16, 32}, Role::kInput, values_for(dtype), std::nullopt},
               {"y", dtype, {16, 32}, Role::kInOut, values_for(dtype), Tolerance::exact()}};
  c.reference = [](Tensors& t) {
    for (int64_t i = 0; i < t["x"].size(); ++i) {
      if (t["x"].get(i) > 0) t["y"].set(i, t["x"].get(i));
    }
  };
  return c;
}

// out[i] = a[i] * s + b[n - 1 - i] for i < n over a grid of 128-element blocks; n and s are
// scalar arguments; b is addressed backwards with 64-bit offsets.
Case grid_case(ScalarType dtype, int64_t n) {
  Case c;
  c.name = case_name("grid_axpy_reversed", dtype, {n});
  c.grid = {static_cast<int>((n + 127) / 128), 1, 1};
  c.build = [dtype] {
    Builder b("grid_axpy");
    Value pa = b.arg("a", ptr(ElementType{dtype})), pb = b.arg("b", ptr(ElementType{dtype}));
    Value out = b.arg("out", ptr(ElementType{dtype}));
    Value n_arg = b.arg("n", i32), s = b.arg("s", f32);
    Value offsets = program_id(0) * 128 + arange(0, 128);
    Value mask = offsets < n_arg;
    Value back = (n_arg.to(i64) - 1) - offsets.to(i64);
    Value v = load(pa + offsets, mask).to(f32) * s + load(pb + back, mask).to(f32);
    store(out + offsets, v.to(ElementType{dtype}), mask);
    return b.finish();
  };
  c.tensors = {{"a", dtype, {n}, Role::kInput, uniform(-10, 10), std::nullopt},
               {"b", dtype, {n}, Role::kInput, uniform(-10, 10), std::nullopt},
               {"out", dtype, {n}, Role::kOutput, nullptr, std::nullopt}};
  c.scalars = {KernelArg::integer(kI32, n), KernelArg::floating(kF32, 0.75)};
  c.reference = [n](Tensors& t) {
    for (int64_t i = 0; i < n; ++i) t["out"].set(i, t["a"].get(i) * 0.75 + t["b"].get(n - 1 - i));
  };
  return c;
}

// Cache/eviction hints, L2's fetch size and acquire/release orders change nothing about the values.
Case hinted_access_case() {
  Case c;
  c.name = "load_store_hints_orders/f32/[64]";
  c.build = [] {
    Builder b("hints");
    Value x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32)), flag = b.arg("flag", ptr(i32));
    Value lanes = arange(0, 64);
    Value v = load(x + lanes, {.cache = Cache::streaming, .evict = Evict::first, .l2_fetch = 256});
    Value w = load(x + lanes, {.cache = Cache::global, .evict = Evict::last, .order = Order::relaxed});
    Value u = load(x + lanes, {.l2_fetch = 128});
    store(y + lanes, v + w + u, {.cache = Cache::streaming});
    fence(Order::release, Scope::gpu);
    store_release(flag, load_acquire(flag, Scope::gpu) + 1, Scope::gpu);
    return b.finish();
  };
  c.tensors = {{"x", kF32, {64}, Role::kInput, uniform(-1, 1), std::nullopt},
               {"y", kF32, {64}, Role::kOutput, nullptr, Tolerance::exact()},
               {"flag", kI32, {1}, Role::kInOut, integers(0, 1000), std::nullopt}};
  c.reference = [](Tensors& t) {
    for (int64_t i = 0; i < 64; ++i) t["y"].set(i, t["x"].get(i) * 3);
    t["flag"].set_int(0, t["flag"].get_int(0) + 1);
  };
  return c;
}

// Loads staged through shared memory ahead of their loop iteration (AccessOptions::stages) read what
// plain loads read: out[r, c] = sum over the steps s of x[r, s cols + c], rows past `live` masked
// (read as zero), at 2 to 4 stages and any number of steps (fewer than the stages too).
Case staged_load_case(ScalarType dtype, int64_t rows, int64_t cols, int64_t steps, int stages) {
  Case c;
  c.name = case_name(absl::StrCat("load_staged_", stages), dtype, {rows, cols, steps});
  const int64_t live = rows - 3;
  c.build = [=] {
    Builder b("staged_load");
    Value x = b.arg("x", ptr(ElementType{dtype})), out = b.arg("out", ptr(f32));
    Value rs = arange(0, rows), cs = arange(0, cols);
    Value acc = range(0, static_cast<int>(steps), 1, zeros({rows, cols}, f32), [&](Value s, Value acc) {
      Value tile = load(x + col(rs) * (steps * cols) + row(s * static_cast<int>(cols) + cs), col(rs < live),
                        {.stages = stages});
      return acc + tile.to(f32);
    });
    store(out + col(rs) * cols + row(cs), acc);
    return b.finish();
  };
  c.tensors = {{"x", dtype, {rows, steps * cols}, Role::kInput, integers(-8, 8), std::nullopt},
               {"out", kF32, {rows, cols}, Role::kOutput, nullptr, Tolerance::exact()}};
  c.reference = [=](Tensors& t) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < cols; ++k) {
        double sum = 0;
        for (int64_t s = 0; r < live && s < steps; ++s) sum += t["x"].get(r * steps * cols + s * cols + k);
        t["out"].set(r * cols + k, sum);
      }
    }
  };
  return c;
}

// A staged tile read back in a matrix unit's fragment layout: bf16 pairs staged as i32 words, taken
// apart by unpack_bf16 into a dot's A operand (as the MXFP4 GEMV's weights are):
// out [16, 8] = sum over K steps of 32 of unpack_bf16(w words) y^T.
Case staged_fragment_case(int64_t steps) {
  Case c;
  c.name = case_name("load_staged_fragments", kI32, {16, 16, steps});
  c.build = [=] {
    Builder b("staged_fragments", {.num_warps = 1});
    Value w = b.arg("w", ptr(i32)), y = b.arg("y", ptr(bf16)), out = b.arg("out", ptr(f32));
    Value rs = arange(0, 16), ts = arange(0, 8);
    Value acc = range(0, static_cast<int>(steps), 1, zeros({16, 8}, f32), [&](Value s, Value acc) {
      Value words = load(w + col(rs) * (steps * 16) + row(s * 16 + arange(0, 16)), {.stages = 3});
      Value ys = load(y + col(ts) * (steps * 32) + row(s * 32 + arange(0, 32)));
      return dot(unpack_bf16(words), trans(ys), acc);
    });
    store(out + col(rs) * 8 + row(ts), acc);
    return b.finish();
  };
  // Words whose halves are small integers as bf16 (exact products and sums).
  Generator pairs = [](HostTensor& t, Rng& rng) {
    std::uniform_int_distribution<int> value(-8, 8);
    for (int64_t i = 0; i < t.size(); ++i) {
      auto bits = [&] { return static_cast<uint32_t>(std::bit_cast<uint32_t>(static_cast<float>(value(rng))) >> 16); };
      t.set_int(i, static_cast<int32_t>(bits() | (bits() << 16)));
    }
  };
  c.tensors = {{"w", kI32, {16, steps * 16}, Role::kInput, pairs, std::nullopt},
               {"y", kBf16, {8, steps * 32}, Role::kInput, integers(-8, 8), std::nullopt},
               {"out", kF32, {16, 8}, Role::kOutput, nullptr, Tolerance::exact()}};
  c.reference = [=](Tensors& t) {
    auto half = [](int64_t word, int which) {
      const uint32_t bits = static_cast<uint32_t>(word) >> (16 * which) & 0xffffu;
      return static_cast<double>(std::bit_cast<float>(bits << 16));
    };
    for (int64_t r = 0; r < 16; ++r) {
      for (int64_t n = 0; n < 8; ++n) {
        double sum = 0;
        for (int64_t k = 0; k < steps * 32; ++k) {
          sum += half(t["w"].get_int(r * steps * 16 + k / 2), static_cast<int>(k % 2)) * t["y"].get(n * steps * 32 + k);
        }
        t["out"].set(r * 8 + n, sum);
      }
    }
  };
  return c;
}

// 8 instances each combine their row of x [8, 64] into acc [64]: sums (exact for integers),
// max, min, and, or, xor; the result does not depend on the order.
Case contended_atomic_case(const std::string& op, ScalarType dtype) {
  Case c;
  c.name = case_name("atomic_" + op + "_contended", dtype, {8, 64});
  c.grid = {8, 1, 1};
  c.build = [op, dtype] {
    Builder b("atomic_" + op);
    Value x = b.arg("x", ptr(ElementType{dtype})), acc = b.arg("acc", ptr(ElementType{dtype}));
    Value lanes = arange(0, 64);
    Value v = load(x + program_id(0) * 64 + lanes);
    if (op == "add") atomic_add(acc + lanes, v, Scope::gpu, Order::relaxed);
    if (op == "max") atomic_max(acc + lanes, v, Scope::gpu, Order::acq_rel);
    if (op == "min") atomic_min(acc + lanes, v, Scope::gpu, Order::release);
    if (op == "and") atomic_and(acc + lanes, v, Scope::gpu, Order::relaxed);
    if (op == "or") atomic_or(acc + lanes, v, Scope::system, Order::relaxed);
    if (op == "xor") atomic_xor(acc + lanes, v, Scope::block, Order::relaxed);
    return b.finish();
  };
  const bool bitwise = op == "and" || op == "or" || op == "xor";
  Generator values = is_float(dtype) ? uniform(-100, 100) : bitwise ? integers(0, 0xffff) : integers(-1000, 1000);
  c.tensors = {{"x", dtype, {8, 64}, Role::kInput, values, std::nullopt},
               // Float sums depend on the order of the adds: allow for cancellation.
               {"acc", dtype, {64}, Role::kInOut, values,
                is_float(dtype) && op == "add" ? std::optional(Tolerance{1e-3, 1e-5}) : std::nullopt}};
  c.reference = [op](Tensors& t) {
    HostTensor& acc = t["acc"];
    for (int64_t j = 0; j < 64; ++j) {
      if (is_float(acc.dtype())) {
        double value = acc.get(j);
        for (int64_t r = 0; r < 8; ++r) {
          const double x = t["x"].get(r * 64 + j);
          value = op == "add" ? value + x : op == "max" ? std::max(value, x) : std::min(value, x);
        }
        acc.set(j, value);
        continue;
      }
      int64_t value = acc.get_int(j);
      for (int64_t r = 0; r < 8; ++r) {
        const int64_t x = t["x"].get_int(r * 64 + j);
        if (op == "add") value += x;
        if (op == "max") value = std::max(value, x);
        if (op == "min") value = std::min(value, x);
        if (op == "and") value &= x;
        if (op == "or") value |= x;
        if (op == "xor") value ^= x;
      }
      acc.set_int(j, value);
    }
  };
  return c;
}

// One instance per slot: xchg, cas (succeeds on even lanes) and masked add, checking the old values.
Case uncontended_atomic_case(ScalarType dtype) {
  Case c;
  c.name = case_name("atomic_xchg_cas_masked_add", dtype, {64});
  c.build = [dtype] {
    Builder b("atomic_old_values");
    Value slots = b.arg("slots", ptr(ElementType{dtype})), cas_slots = b.arg("cas_slots", ptr(ElementType{dtype}));
    Value add_slots = b.arg("add_slots", ptr(ElementType{dtype})), x = b.arg("x", ptr(ElementType{dtype}));
    Value olds = b.arg("olds", ptr(ElementType{dtype})), cas_olds = b.arg("cas_olds", ptr(ElementType{dtype}));
    Value lanes = arange(0, 64);
    Value v = load(x + lanes);
    store(olds + lanes, atomic_xchg(slots + lanes, v, Scope::gpu, Order::acq_rel));
    Value current = load(cas_slots + lanes);
    Value expected = where(lanes % 2 == 0, current, current + 1);
    store(cas_olds + lanes, atomic_cas(cas_slots + lanes, expected, v, Scope::gpu, Order::acq_rel));
    atomic_add(add_slots + lanes, v, Scope::gpu, Order::relaxed, lanes < 40);
    return b.finish();
  };
  Generator values = integers(-1000, 1000);
  c.tensors = {{"slots", dtype, {64}, Role::kInOut, values, std::nullopt},
               {"cas_slots", dtype, {64}, Role::kInOut, values, std::nullopt},
               {"add_slots", dtype, {64}, Role::kInOut, values, std::nullopt},
               {"x", dtype, {64}, Role::kInput, values, std::nullopt},
               {"olds", dtype, {64}, Role::kOutput, nullptr, std::nullopt},
               {"cas_olds", dtype, {64}, Role::kOutput, nullptr, std::nullopt}};
  c.reference = [](Tensors& t) {
    for (int64_t i = 0; i < 64; ++i) {
      const int64_t x = t["x"].get_int(i);
      t["olds"].set_int(i, t["slots"].get_int(i));
      t["slots"].set_int(i, x);
      t["cas_olds"].set_int(i, t["cas_slots"].get_int(i));
      if (i % 2 == 0) t["cas_slots"].set_int(i, x);
      if (i < 40) t["add_slots"].set_int(i, t["add_slots"].get_int(i) + x);
    }
  };
  return c;
}

// Float atomic add into distinct slots (exact: one rounding per add), f32/f16/bf16.
Case float_atomic_add_case(ScalarType dtype) {
  Case c;
  c.name = case_name("atomic_add_float_old", dtype, {64});
  c.build = [dtype] {
    Builder b("atomic_add_float");
    Value acc = b.arg("acc", ptr(ElementType{dtype})), x = b.arg("x", ptr(ElementType{dtype}));
    Value olds = b.arg("olds", ptr(ElementType{dtype}));
    Value lanes = arange(0, 64);
    store(olds + lanes, atomic_add(acc + lanes, load(x + lanes), Scope::gpu, Order::relaxed));
    return b.finish();
  };
  c.tensors = {{"acc", dtype, {64}, Role::kInOut, uniform(-100, 100), Tolerance::exact()},
               {"x", dtype, {64}, Role::kInput, uniform(-100, 100), std::nullopt},
               {"olds", dtype, {64}, Role::kOutput, nullptr, Tolerance::exact()}};
  c.reference = [](Tensors& t) {
    for (int64_t i = 0; i < 64; ++i) {
      t["olds"].set(i, t["acc"].get(i));
      t["acc"].set(i, t["acc"].get(i) + t["x"].get(i));  // exact sum of two 16/32-bit floats, rounded once
    }
  };
  return c;
}

// The timer moves forward across a barrier and a fence; wait_until on a set flag returns false at
// once and on an unset one times out (returns true) after its short timeout.
Case timer_and_wait_case() {
  Case c;
  c.name = "global_timer_wait_until/i32/[4]";
  c.build = [] {
    Builder b("timer_wait");
    Value set_flag = b.arg("set_flag", ptr(i32)), unset_flag = b.arg("unset_flag", ptr(i32));
    Value out = b.arg("out", ptr(i32));
    Value start = global_timer();
    barrier();
    fence(Order::acq_rel, Scope::gpu);
    Value ready = wait_until(set_flag, Cmp::eq, 1, 1'000'000'000);
    Value missing = wait_until(unset_flag, Cmp::ge, 1, 1'000'000, Scope::system);
    Value elapsed = global_timer() - start;
    store(out, (elapsed >= 1'000'000).to(i32));
    store(out + 1, ready.to(i32));
    store(out + 2, missing.to(i32));
    store(out + 3, (elapsed < 10'000'000'000).to(i32));
    return b.finish();
  };
  c.tensors = {{"set_flag", kI32, {1}, Role::kInput, constant(1), std::nullopt},
               {"unset_flag", kI32, {1}, Role::kInput, constant(0), std::nullopt},
               {"out", kI32, {4}, Role::kOutput, nullptr, std::nullopt}};
  c.reference = [](Tensors& t) {
    t["out"].set_int(0, 1);
    t["out"].set_int(1, 0);
    t["out"].set_int(2, 1);
    t["out"].set_int(3, 1);
  };
  return c;
}

// wait_until with WaitOptions in one program: a flag that holds ends it as met even with the abort
// word set (the flag is read first); an unset flag with a clear abort word times out; with the
// abort word set it ends at once, aborted; and without an abort word it times out. Each gives the
// value its last load saw.
Case wait_outcome_case(ScalarType dtype) {
  Case c;
  c.name = case_name("wait_until_outcome", dtype, {2});
  c.build = [dtype] {
    Builder b("wait_outcome");
    Value flags = b.arg("flags", ptr(ElementType{dtype})), abort = b.arg("abort", ptr(i32));
    Value out = b.arg("out", ptr(i32));
    Value start = global_timer();
    const Waited met = wait_until(flags, Cmp::ge, 3, 1'000'000'000, Scope::gpu, {.abort_if_nonzero = abort + 1});
    const Waited timed_out =
        wait_until(flags + 1, Cmp::eq, 1, 1'000'000, Scope::system, {.abort_if_nonzero = abort});
    const Waited aborted =
        wait_until(flags + 1, Cmp::eq, 1, 10'000'000'000, Scope::gpu, {.abort_if_nonzero = abort + 1});
    const Waited plain = wait_until(flags + 1, Cmp::eq, 1, 1'000'000, Scope::gpu, WaitOptions{});
    const Waited* waits[] = {&met, &timed_out, &aborted, &plain};
    for (int i = 0; i < 4; ++i) {
      store(out + 2 * i, waits[i]->outcome);
      store(out + 2 * i + 1, waits[i]->seen.to(i32));
    }
    store(out + 8, (met.met() & timed_out.timed_out() & aborted.aborted()).to(i32));
    store(out + 9, (global_timer() - start < 5'000'000'000).to(i32));  // the aborted wait did not run its bound
    return b.finish();
  };
  c.tensors = {{"flags", dtype, {2}, Role::kInput, nullptr, std::nullopt},
               {"abort", kI32, {2}, Role::kInput, nullptr, std::nullopt},
               {"out", kI32, {10}, Role::kOutput, nullptr, std::nullopt}};
  c.tensors[0].generate = [](HostTensor& t, Rng&) {
    t.set_int(0, 5);
    t.set_int(1, 9);
  };
  c.tensors[1].generate = [](HostTensor& t, Rng&) {
    t.set_int(0, 0);
    t.set_int(1, 1);
  };
  c.reference = [](Tensors& t) {
    const int64_t expected[] = {kWaitMet, 5, kWaitTimedOut, 9, kWaitAborted, 9, kWaitTimedOut, 9, 1, 1};
    for (int64_t i = 0; i < 10; ++i) t["out"].set_int(i, expected[i]);
  };
  return c;
}

// Two programs: program 1 sets the awaited flag to another value (3) while program 0 waits, whose
// wait times out with the value it saw last (3, not the 7 it started with); then program 1 sets the
// abort word a millisecond into program 0's second wait (10 s bound), which ends it: aborted, at
// least a millisecond and far less than the bound after it began.
Case wait_abort_case() {
  Case c;
  c.name = "wait_until_abort_mid_wait/i32/[2]";
  c.grid = {2, 1, 1};
  c.concurrent_programs = true;
  c.build = [] {
    Builder b("wait_abort");
    Value flag = b.arg("flag", ptr(i32)), started = b.arg("started", ptr(i32)), abort = b.arg("abort", ptr(i32));
    Value out = b.arg("out", ptr(i32));
    if_(program_id(0) == 0, [&] {
      store_release(started, 1, Scope::gpu);
      const Waited first = wait_until(flag, Cmp::eq, 1, 1'000'000'000, Scope::gpu, {.abort_if_nonzero = abort});
      Value begun = global_timer();
      store_release(started, 2, Scope::gpu);
      const Waited second = wait_until(flag, Cmp::eq, 1, 10'000'000'000, Scope::gpu, {.abort_if_nonzero = abort});
      Value took = global_timer() - begun;
      store(out, first.outcome);
      store(out + 1, first.seen);
      store(out + 2, second.outcome);
      store(out + 3, second.seen);
      store(out + 4, (took >= 1'000'000).to(i32));
      store(out + 5, (took < 1'000'000'000).to(i32));
    });
    if_(program_id(0) == 1, [&] {
      wait_until(started, Cmp::ge, 1, 5'000'000'000, Scope::gpu);
      store_release(flag, 3, Scope::gpu);
      wait_until(started, Cmp::ge, 2, 5'000'000'000, Scope::gpu);
      wait_until(flag, Cmp::eq, 1, 1'000'000, Scope::gpu);  // a millisecond: the flag stays 3
      store_release(abort, 1, Scope::system);
    });
    return b.finish();
  };
  c.tensors = {{"flag", kI32, {1}, Role::kInOut, constant(7), Tolerance::exact()},
               {"started", kI32, {1}, Role::kInOut, constant(0), Tolerance::exact()},
               {"abort", kI32, {1}, Role::kInOut, constant(0), Tolerance::exact()},
               {"out", kI32, {6}, Role::kOutput, nullptr, std::nullopt}};
  c.reference = [](Tensors& t) {
    t["flag"].set_int(0, 3);
    t["started"].set_int(0, 2);
    t["abort"].set_int(0, 1);
    const int64_t expected[] = {kWaitTimedOut, 3, kWaitAborted, 3, 1, 1};
    for (int64_t i = 0; i < 6; ++i) t["out"].set_int(i, expected[i]);
  };
  return c;
}

// Dependent launch: each program lets the next kernel start, prefetches its weights (a read no
// kernel writes), then waits for the previous kernel before reading its input. The values are those
// of the program without the three ops; on a GPU the kernel launches with programmatic stream
// serialization (sm_90+) after the runner's copies.
Case grid_dependency_case() {
  Case c;
  c.name = "grid_dependency_scale/f32/[1000]";
  c.grid = {8, 1, 1};
  c.build = [] {
    Builder b("grid_dependency_scale");
    Value x = b.arg("x", ptr(f32)), w = b.arg("w", ptr(f32)), out = b.arg("out", ptr(f32));
    Value offsets = program_id(0) * 128 + arange(0, 128);
    Value mask = offsets < 1000;
    launch_dependents();
    prefetch(w + offsets, mask);
    wait_grid_dependency();
    store(out + offsets, load(x + offsets, mask) * load(w + offsets, mask), mask);
    return b.finish();
  };
  c.tensors = {{"x", kF32, {1000}, Role::kInput, uniform(-10, 10), std::nullopt},
               {"w", kF32, {1000}, Role::kInput, uniform(-10, 10), std::nullopt},
               {"out", kF32, {1000}, Role::kOutput, nullptr, Tolerance::exact()}};
  c.reference = [](Tensors& t) {
    for (int64_t i = 0; i < 1000; ++i) t["out"].set(i, static_cast<float>(t["x"].get(i) * t["w"].get(i)));
  };
  return c;
}

}  // namespace

std::vector<Case> memory_cases() {
  std::vector<Case> cases;
  for (ScalarType dtype : {kF32, kBf16, kF16, kF64, kI32, kI8, kI64, kU8}) {
    cases.push_back(masked_load_case(dtype));
    cases.push_back(masked_store_case(dtype));
  }
  for (ScalarType dtype : {kF32, kBf16}) {
    for (int64_t n : {1000, 128, 77}) cases.push_back(grid_case(dtype, n));
  }
  cases.push_back(hinted_access_case());
  for (ScalarType dtype : {kU8, kBf16, kI32, kF32}) {
    cases.push_back(staged_load_case(dtype, 16, 64, 5, 3));
    cases.push_back(staged_load_case(dtype, 32, 16, 1, 4));
  }
  cases.push_back(staged_load_case(kBf16, 64, 128, 7, 2));
  for (int64_t steps : {1, 6}) cases.push_back(staged_fragment_case(steps));
  for (ScalarType dtype : {kI32, kI64, kU32}) {
    for (const char* op : {"add", "max", "min", "and", "or", "xor"}) cases.push_back(contended_atomic_case(op, dtype));
    cases.push_back(uncontended_atomic_case(dtype));
  }
  for (const char* op : {"max", "min"}) cases.push_back(contended_atomic_case(op, kF32));
  cases.push_back(contended_atomic_case("add", kF32));
  for (ScalarType dtype : {kF32, kF16, kBf16}) cases.push_back(float_atomic_add_case(dtype));
  cases.push_back(timer_and_wait_case());
  for (ScalarType dtype : {kI32, kU32, kI64}) cases.push_back(wait_outcome_case(dtype));
  cases.push_back(wait_abort_case());
  cases.push_back(grid_dependency_case());
  return cases;
}

}  // namespace monotile::conformance
