// The one seed every randomized test draws from: MONOTILE_TEST_SEED when set, else a fixed default,
// so that a run's verdict never depends on the draw and any failure can be replayed exactly.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace monotile::testing {

// The run's base seed: MONOTILE_TEST_SEED (decimal or 0x-hex) or kDefaultTestSeed. A malformed
// value aborts the test program with a message naming the variable.
uint64_t test_seed();

inline constexpr uint64_t kDefaultTestSeed = 20261204;

// A seed for one stream of the running test: the base seed mixed with the current test's full
// name and `salt`, so that a test run alone draws exactly what it draws inside the whole suite.
uint64_t case_seed(std::string_view salt = {});

// A seed for a stream named `name` alone, the same in every test: for suites that must draw the
// same inputs for one case (the interpreter's and the GPU's conformance runs).
uint64_t shared_seed(std::string_view name);

// The running test's next generator: its n-th call in a test draws the same numbers in every run
// with the same base seed (seeded with case_seed("#n")).
std::mt19937 case_rng();

// A generator seeded with case_seed(salt).
std::mt19937 named_rng(std::string_view salt);

// "MONOTILE_TEST_SEED=<seed>": the line that replays this run, printed after every failure.
std::string replay_hint();

}  // namespace monotile::testing
