// A layer kernel's stage run alone on the interpreter, for the stage tests (attn_res_stage_test,
// router_stage_test): the test kernel's last three arguments are the hand-off words every stage's
// waits need (the epoch word its tag comes from, the rank's health words, the alarm word), and the
// harness holds the executor, makes and fills buffers, and says whether a wait gave up.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "dsl/dsl.h"
#include "kernels/k3/handoff.h"
#include "kernels/k3/k1.h"
#include "tests/conformance/interpreter_executor.h"

namespace monotile::kernels::k3 {

// Declares the hand-off words as the kernel's next three arguments (epoch, health, alarm) and
// builds the context of a launch at slot 0 whose waits give up after 10 s.
inline HandoffContext stage_handoff_args(dsl::Builder& b) {
  using namespace monotile::dsl;  // NOLINT: the test's kernel reads as the DSL guide writes them
  auto epoch = b.arg("epoch", ptr(i32));
  auto health = b.arg("health", ptr(i32));
  auto alarm = b.arg("alarm", ptr(i32));
  return {.tag = launch_tag(epoch, full({}, 0, i32)),
          .health = health,
          .alarm = alarm,
          .wait_ns = 10'000'000'000};
}

class StageHarness {
 public:
  // The hand-off words for `programs` program instances, zeroed once: launches then share them
  // (and the stage's counters) as a rank's builds do, each launch with the next epoch.
  explicit StageHarness(int programs) : programs_(programs) {
    epoch_ = buffer(4, "epoch");
    health_ = buffer(static_cast<size_t>(health_words(programs)) * 4, "health");
    alarm_ = buffer(4, "alarm");
    put(health_, std::vector<int32_t>(static_cast<size_t>(health_words(programs)), 0));
    put(alarm_, std::vector<int32_t>(1, 0));
  }

  conformance::DeviceBuffer buffer(size_t bytes, std::string_view name) {
    return *executor_.allocate(bytes, name);
  }

  template <typename T>
  void put(const conformance::DeviceBuffer& to, const std::vector<T>& host) {
    ASSERT_TRUE(executor_.copy_in(to, std::as_bytes(std::span(host))).ok());
  }

  template <typename T>
  std::vector<T> get(const conformance::DeviceBuffer& from, size_t count) {
    std::vector<T> host(count);
    EXPECT_TRUE(executor_.copy_out(std::as_writable_bytes(std::span(host)), from).ok());
    return host;
  }

  // Launches `program` on every program instance with `args` and the hand-off words after them,
  // at the next epoch; false (with a test failure) where the launch failed.
  bool launch(const dsl::Program& program, std::vector<conformance::KernelArg> args) {
    put(epoch_, std::vector<int32_t>{++epoch_value_});
    for (const conformance::DeviceBuffer& word : {epoch_, health_, alarm_})
      args.push_back(conformance::KernelArg::buffer(word, dsl::ScalarType::kI32));
    absl::Status launched = executor_.launch(program, {programs_, 1, 1}, args);
    EXPECT_TRUE(launched.ok()) << launched;
    return launched.ok();
  }

  // The epoch the next launch runs at (a test that publishes a stage's input flag sets its tag).
  int32_t next_epoch() const { return epoch_value_ + 1; }

  // Whether a wait of any launch so far gave up (the health words' FAILED word).
  bool failed() { return get<int32_t>(health_, 1)[0] != 0; }

 private:
  int programs_;
  conformance::InterpreterExecutor executor_;
  conformance::DeviceBuffer epoch_, health_, alarm_;
  int32_t epoch_value_ = 0;
};

}  // namespace monotile::kernels::k3
