// The barriers GlobalHazards places between same-buffer global accesses inside a program: a [16]
// vector on 4 warps sits in every warp, one warp stores it, so an in-place update needs a barrier
// between every warp's load and the store; different buffers need none.
#include <string>

#include "dsl/dsl.h"
#include "dsl/lower/lower_test_util.h"
#include "gtest/gtest.h"

namespace monotile::dsl::lower {
namespace {

using testing::count;
using testing::lowered;

constexpr const char* kTargets[] = {"sm_90a", "gfx90a"};
constexpr const char* kBarrier = "__syncthreads();";

// x[i] += 1 in place, or y = x + 1 into another buffer.
Program increment(bool in_place) {
  Builder b(in_place ? "increment_in_place" : "increment_copy", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32));
  auto y = in_place ? x : b.arg("y", ptr(f32));
  auto offs = arange(0, 16);
  store(y + offs, load(x + offs) + 1.0f);
  return b.finish();
}

// The source between the first occurrences of `from` and of `to` after it.
std::string between(const std::string& source, const std::string& from, const std::string& to) {
  size_t start = source.find(from);
  if (start == std::string::npos) return "";
  size_t end = source.find(to, start + from.size());
  return source.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

TEST(GlobalHazards, AnInPlaceUpdateWaitsForEveryWarpsLoad) {
  for (const char* target : kTargets) {
    SCOPED_TRACE(target);
    EXPECT_EQ(count(lowered(increment(true), target).source, kBarrier), 1);
  }
}

TEST(GlobalHazards, ALoadAndAStoreOfDifferentBuffersNeedNoBarrier) {
  for (const char* target : kTargets) {
    SCOPED_TRACE(target);
    EXPECT_EQ(count(lowered(increment(false), target).source, kBarrier), 0);
  }
}

TEST(GlobalHazards, ALoadAfterAStoreOfTheSameBufferWaitsForIt) {
  Builder b("store_then_load", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
  auto offs = arange(0, 16);
  store(x + offs, full({16}, 2.0f, f32));
  store(y + offs, load(x + offs));
  Program program = b.finish();
  for (const char* target : kTargets) {
    SCOPED_TRACE(target);
    EXPECT_EQ(count(lowered(program, target).source, kBarrier), 1);
  }
}

TEST(GlobalHazards, TwoStoresOfTheSameBufferAreOrdered) {
  Builder b("store_twice", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32));
  auto offs = arange(0, 16);
  store(x + offs, full({16}, 1.0f, f32));
  store(x + offs, full({16}, 2.0f, f32));
  Program program = b.finish();
  for (const char* target : kTargets) {
    SCOPED_TRACE(target);
    EXPECT_EQ(count(lowered(program, target).source, kBarrier), 1);
  }
}

TEST(GlobalHazards, StoresOfDifferentPiecesOfABufferNeedNoBarrier) {
  // Two halves of an output, as a program that writes each element once stores them.
  Builder b("store_halves", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32));
  auto offs = arange(0, 16);
  store(x + offs, full({16}, 1.0f, f32));
  store(x + 16 + offs, full({16}, 2.0f, f32));
  Program program = b.finish();
  for (const char* target : kTargets) {
    SCOPED_TRACE(target);
    EXPECT_EQ(count(lowered(program, target).source, kBarrier), 0);
  }
}

TEST(GlobalHazards, ALoopsInPlaceUpdateWaitsInEveryIteration) {
  // Iteration i's store and iteration i + 1's load of the same elements: two barriers in the body.
  Builder b("increment_loop", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32)), n = b.arg("n", i32);
  auto offs = arange(0, 16);
  range(0, n, 1, [&](Value) { store(x + offs, load(x + offs) + 1.0f); });
  Program program = b.finish();
  for (const char* target : kTargets) {
    SCOPED_TRACE(target);
    const std::string source = lowered(program, target).source;
    EXPECT_EQ(count(between(source, "for (", "\n  }\n"), kBarrier), 2) << source;
  }
}

TEST(GlobalHazards, AStoreInABranchIsPendingAfterIt) {
  Builder b("store_in_branch", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32)), flag = b.arg("flag", i32);
  auto offs = arange(0, 16);
  if_(flag > 0, [&] { store(x + offs, full({16}, 2.0f, f32)); });
  store(y + offs, load(x + offs));
  Program program = b.finish();
  for (const char* target : kTargets) {
    SCOPED_TRACE(target);
    EXPECT_EQ(count(lowered(program, target).source, kBarrier), 1);
  }
}

TEST(GlobalHazards, AnExplicitBarrierClearsWhatIsPending) {
  Builder b("increment_with_barrier", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32));
  auto offs = arange(0, 16);
  auto v = load(x + offs) + 1.0f;
  barrier();
  store(x + offs, v);
  Program program = b.finish();
  for (const char* target : kTargets) {
    SCOPED_TRACE(target);
    EXPECT_EQ(count(lowered(program, target).source, kBarrier), 1);
  }
}

}  // namespace
}  // namespace monotile::dsl::lower
