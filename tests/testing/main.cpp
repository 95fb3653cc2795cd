// The main of every GoogleTest binary: after each failure it prints the seed that replays the run,
// so that a failure seen once in CI can be reproduced on any machine.
#include <cstdio>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/seed.h"

namespace {

// The test's name is kept from OnTestStart: gtest holds its lock while it reports a result, so
// asking it for the current test from OnTestPartResult would deadlock.
class SeedPrinter : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo& info) override {
    test_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::printf("  replay: %s ctest -R '%s'\n", monotile::testing::replay_hint().c_str(), test_.c_str());
  }

  std::string test_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(new SeedPrinter);
  return RUN_ALL_TESTS();
}
