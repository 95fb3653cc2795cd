// Tutorial 5: a persistent two-stage kernel: tickets, flags with a timeout, and epochs.
//
// Decode kernels fuse several dependent stages into one launch. Instead of one instance per work
// item, a *persistent* grid (about one instance per SM) loops, taking *tickets* from an atomic
// counter. Tickets [0, T) are stage 1 (y[t] = 2 x[t] + 1), tickets [T, 2T) are stage 2
// (z[t] = y[t] + y[t + 1 mod T]). A stage-2 task needs the stage-1 results of two tiles, possibly
// computed by other instances, so stage 1 *publishes* each tile: its data with plain stores, then
// a flag with a release store. Stage 2 *waits* for both flags with `wait_until` (acquire loads),
// after which the data is visible. Tickets come in order, so every stage-1 task is taken before
// any stage-2 task: as long as all instances run at once (a persistent grid) nobody waits forever.
//
// Still, a bug or a dead peer must not hang the GPU: every wait has a timeout and returns whether
// it timed out. Here a timeout is recorded in a `health` word (a count and the tile) and the task
// is skipped; the host (or a later step) reads the health word and decides.
//
// Relaunching without host work (and replaying inside a CUDA/HIP graph, whose arguments are
// frozen) needs control words that reset themselves. Flags carry an *epoch*: a launch reads
// `epoch` once, publishes `epoch + 1` and waits for `>= epoch + 1`, so last launch's flags
// never look ready. The last instance to finish (an atomic count of finished instances) zeroes
// the ticket and finished counters and then releases `epoch + 1` for the next launch. Even a launch
// with timeouts finishes every instance, so the control words stay consistent.
#include <chrono>
#include <cmath>
#include <vector>

#include "docs/tutorial/tutorial_util.h"
#include "dsl/dsl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile::tutorial {
namespace {

using namespace monotile::dsl;  // NOLINT

struct PipelineShape {
  int tiles = 16;            // T: rows of x, y and z
  int width = 64;            // elements per row
  int instances = 4;         // the persistent grid
  int64_t timeout_ns = 1'000'000'000;
  int skip_publishing = -1;  // for the test of a missing producer: a tile whose flag is never set
};

Program pipeline(const PipelineShape& s) {
  Builder b("pipeline");
  Value x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32)), z = b.arg("z", ptr(f32));
  Value control = b.arg("control", ptr(i32));  // [0] epoch, [1] next ticket, [2] finished instances
  Value flags = b.arg("flags", ptr(i32));      // [T] epoch + 1 once y[t] is written
  Value health = b.arg("health", ptr(i32));    // [0] timeouts, [1] a tile that timed out
  Value epoch_word = control, ticket_word = control + 1, finished_word = control + 2;

  Value epoch = load_acquire(epoch_word, Scope::gpu);
  Value ready = epoch + 1;
  Value cols = arange(0, s.width);
  Value first = atomic_add(ticket_word, 1, Scope::gpu, Order::acq_rel);
  while_(
      first, [&](Value ticket) { return ticket < 2 * s.tiles; },
      [&](Value ticket) {
        if_(
            ticket < s.tiles,
            [&] {  // stage 1: compute y[t], then publish it
              store(y + ticket * s.width + cols, load(x + ticket * s.width + cols) * 2.0f + 1.0f);
              if (s.skip_publishing < 0) {
                store_release(flags + ticket, ready, Scope::gpu);
              } else {  // a C++ condition: only the test's faulty program has this branch
                if_(ticket != s.skip_publishing, [&] { store_release(flags + ticket, ready, Scope::gpu); });
              }
            },
            [&] {  // stage 2: wait for y[t] and y[t + 1], then combine them
              Value t = ticket - s.tiles;
              Value next = (t + 1) % s.tiles;
              Value late = wait_until(flags + t, Cmp::ge, ready, s.timeout_ns) |
                           wait_until(flags + next, Cmp::ge, ready, s.timeout_ns);
              if_(
                  late,
                  [&] {
                    atomic_add(health, 1, Scope::system, Order::relaxed);
                    atomic_xchg(health + 1, t, Scope::system, Order::relaxed);
                  },
                  [&] { store(z + t * s.width + cols, load(y + t * s.width + cols) + load(y + next * s.width + cols)); });
            });
        return atomic_add(ticket_word, 1, Scope::gpu, Order::acq_rel);
      });
  // The last instance out resets the counters and opens the next epoch.
  Value finished = atomic_add(finished_word, 1, Scope::gpu, Order::acq_rel);
  if_(finished == s.instances - 1, [&] {
    store(ticket_word, 0);
    store(finished_word, 0);
    store_release(epoch_word, epoch + 1, Scope::gpu);
  });
  return b.finish();
}

struct PipelineBuffers {
  explicit PipelineBuffers(const PipelineShape& s)
      : x(s.tiles * s.width), y(x.size()), z(x.size(), std::nanf("")), control(3, 0), flags(s.tiles, 0), health(2, 0) {}
  std::vector<float> x, y, z;
  std::vector<int32_t> control, flags, health;

  absl::Status launch(const Program& program, const PipelineShape& s, std::vector<std::string>* timeouts = nullptr) {
    dsl::interp::InterpretOptions options;
    options.allocations = {allocation(x, "x"),         allocation(y, "y"),         allocation(z, "z"),
                           allocation(control, "control"), allocation(flags, "flags"), allocation(health, "health")};
    options.wait_timeouts = timeouts;
    const std::vector<dsl::interp::ArgValue> args = {
        dsl::interp::ArgValue::of(x.data()),       dsl::interp::ArgValue::of(y.data()),
        dsl::interp::ArgValue::of(z.data()),       dsl::interp::ArgValue::of(control.data()),
        dsl::interp::ArgValue::of(flags.data()),   dsl::interp::ArgValue::of(health.data())};
    return dsl::interp::interpret(program, {s.instances, 1, 1}, args, options);
  }
  float expected_z(const PipelineShape& s, int t, int c) const {
    const int next = (t + 1) % s.tiles;
    return (x[t * s.width + c] * 2.0f + 1.0f) + (x[next * s.width + c] * 2.0f + 1.0f);
  }
};

TEST(TutorialPersistentPipeline, RelaunchesWithoutHostResets) {
  const PipelineShape shape;
  const Program program = pipeline(shape);
  PipelineBuffers buffers(shape);
  for (int launch = 0; launch < 6; ++launch) {
    // New inputs each time, as a replayed graph would see; control words are left alone.
    for (size_t i = 0; i < buffers.x.size(); ++i) buffers.x[i] = static_cast<float>((i * 7 + launch * 13) % 29) - 14;
    ASSERT_TRUE(buffers.launch(program, shape).ok()) << launch;
    for (int t = 0; t < shape.tiles; ++t) {
      for (int c = 0; c < shape.width; ++c) {
        ASSERT_EQ(buffers.z[t * shape.width + c], buffers.expected_z(shape, t, c)) << "launch " << launch << " tile " << t;
      }
    }
    EXPECT_EQ(buffers.control[0], launch + 1);  // epoch advanced by the kernel itself
    EXPECT_EQ(buffers.control[1], 0);           // ticket counter reset
    EXPECT_EQ(buffers.control[2], 0);           // finished counter reset
    EXPECT_EQ(buffers.health[0], 0);
    for (int32_t flag : buffers.flags) EXPECT_EQ(flag, launch + 1);
  }
}

TEST(TutorialPersistentPipeline, MissingProducerTimesOutAndIsReported) {
  PipelineShape faulty;
  faulty.timeout_ns = 20'000'000;  // 20 ms
  faulty.skip_publishing = 5;      // tile 5's flag is never set: tasks 4 and 5 of stage 2 wait on it
  PipelineBuffers buffers(faulty);
  for (size_t i = 0; i < buffers.x.size(); ++i) buffers.x[i] = static_cast<float>(i % 11);
  std::vector<std::string> timeouts;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(buffers.launch(pipeline(faulty), faulty, &timeouts).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));  // bounded, not hung
  EXPECT_EQ(buffers.health[0], 2);
  EXPECT_TRUE(buffers.health[1] == 4 || buffers.health[1] == 5) << buffers.health[1];
  ASSERT_EQ(timeouts.size(), 2u);
  for (const std::string& report : timeouts) {
    EXPECT_THAT(report, ::testing::HasSubstr("wait_until at 05_persistent_pipeline.cpp:"));
    EXPECT_THAT(report, ::testing::HasSubstr("timed out after 20000000 ns: element 5 of \"flags\" is 0, waiting for ge 1"));
  }
  for (int t = 0; t < faulty.tiles; ++t) {
    const bool skipped = t == 4 || t == 5;
    for (int c = 0; c < faulty.width; ++c) {
      const float z = buffers.z[t * faulty.width + c];
      if (skipped) ASSERT_TRUE(std::isnan(z)) << "tile " << t;  // task skipped: z untouched
      else ASSERT_EQ(z, buffers.expected_z(faulty, t, c)) << "tile " << t;
    }
  }
  // Every instance finished, so the control words are consistent: the fixed program runs next.
  EXPECT_EQ(buffers.control[0], 1);
  EXPECT_EQ(buffers.control[1], 0);
  const PipelineShape fixed;
  buffers.health = {0, 0};
  ASSERT_TRUE(buffers.launch(pipeline(fixed), fixed).ok());
  EXPECT_EQ(buffers.health[0], 0);
  EXPECT_EQ(buffers.z[4 * fixed.width], buffers.expected_z(fixed, 4, 0));
}

}  // namespace
}  // namespace monotile::tutorial
