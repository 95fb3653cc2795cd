// CompilerOptions from the environment: valid values apply, malformed ones warn once and are ignored.
#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/compiler.h"

namespace monotile::jit {
namespace {

using ::testing::HasSubstr;

class CompilerOptionsFromEnvironment : public ::testing::Test {
 protected:
  void TearDown() override {
    ::unsetenv("MONOTILE_JIT_TIMEOUT");
    ::unsetenv("MONOTILE_JIT_ISOLATION");
  }
};

TEST_F(CompilerOptionsFromEnvironment, DefaultsIsolateWithAFiveMinuteTimeout) {
  CompilerOptions options = CompilerOptions::from_environment();
  EXPECT_EQ(options.isolation, Isolation::kWorkerProcess);
  EXPECT_EQ(options.timeout_seconds, 300);
}

TEST_F(CompilerOptionsFromEnvironment, ValidValuesApply) {
  ::setenv("MONOTILE_JIT_TIMEOUT", "12.5", 1);
  ::setenv("MONOTILE_JIT_ISOLATION", "in-process", 1);
  CompilerOptions options = CompilerOptions::from_environment();
  EXPECT_EQ(options.isolation, Isolation::kInProcess);
  EXPECT_EQ(options.timeout_seconds, 12.5);
}

TEST_F(CompilerOptionsFromEnvironment, MalformedValuesWarnAndKeepDefaults) {
  ::setenv("MONOTILE_JIT_TIMEOUT", "soon", 1);
  ::setenv("MONOTILE_JIT_ISOLATION", "threads", 1);
  ::testing::internal::CaptureStderr();
  CompilerOptions options = CompilerOptions::from_environment();
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(options.isolation, Isolation::kWorkerProcess);
  EXPECT_EQ(options.timeout_seconds, 300);
  EXPECT_THAT(warnings, HasSubstr("MONOTILE_JIT_TIMEOUT=\"soon\" is not a positive number of seconds; using 300"));
  EXPECT_THAT(warnings,
              HasSubstr("MONOTILE_JIT_ISOLATION=\"threads\" is neither \"process\" nor \"in-process\"; using \"process\""));
}

}  // namespace
}  // namespace monotile::jit
