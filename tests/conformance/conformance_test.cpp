// Runs every conformance case on the CPU interpreter, one test per case. Inputs are fresh each run
// (from the run's seed, MONOTILE_TEST_SEED); a failure names the seed.
#include <cctype>
#include <cstdlib>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/interpreter_executor.h"
#include "tests/testing/seed.h"

namespace monotile::conformance {

// Test parameters print as their case name, with parentheses for brackets: CTest's test names
// include this text, and CMake lists treat square brackets specially.
void PrintTo(const Case& c, std::ostream* out) {
  std::string name = c.name;
  for (char& ch : name) ch = ch == '[' ? '(' : ch == ']' ? ')' : ch;
  *out << name;
}

namespace {


// gtest names: letters, digits and underscores only.
std::string test_name(const std::string& case_name) {
  std::string name;
  for (char ch : case_name) {
    if (std::isalnum(static_cast<unsigned char>(ch))) name += ch;
    else if (!name.empty() && name.back() != '_') name += '_';
  }
  while (!name.empty() && name.back() == '_') name.pop_back();
  return name;
}

class InterpreterConformance : public ::testing::TestWithParam<Case> {};

TEST_P(InterpreterConformance, MatchesReference) {
  const Case& c = GetParam();
  InterpreterExecutor executor;
  // Each case draws from its own stream: replaying one case needs only the base seed.
  const uint64_t seed = monotile::testing::shared_seed(c.name);
  const absl::Status status = run_case(executor, c, seed);
  EXPECT_TRUE(status.ok()) << status.message();
}

INSTANTIATE_TEST_SUITE_P(All, InterpreterConformance, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return test_name(info.param.name); });

TEST(ConformanceSuite, CaseNamesAreUnique) {
  std::set<std::string> names;
  for (const Case& c : all_cases()) EXPECT_TRUE(names.insert(test_name(c.name)).second) << c.name;
}

}  // namespace
}  // namespace monotile::conformance
