// The base seed from the environment, and per-test streams derived from it.
#include "tests/testing/seed.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "gtest/gtest.h"
#include "xxhash.h"

namespace monotile::testing {

uint64_t test_seed() {
  static const uint64_t seed = [] {
    const char* text = std::getenv("MONOTILE_TEST_SEED");
    if (text == nullptr || *text == '\0') return kDefaultTestSeed;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 0);
    if (*end != '\0') {
      std::fprintf(stderr, "MONOTILE_TEST_SEED=\"%s\" is not an unsigned integer (decimal or 0x-hex)\n", text);
      std::exit(2);
    }
    return static_cast<uint64_t>(value);
  }();
  return seed;
}

namespace {

// With MONOTILE_TEST_SEED_LOG set, the name of each test that draws from the seed is appended to
// that file once: scripts/seed_sweep.sh reruns only those under further seeds.
void note_seeded_test() {
  static const char* log = std::getenv("MONOTILE_TEST_SEED_LOG");
  if (log == nullptr || *log == '\0') return;
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return;
  static std::mutex mutex;
  static const ::testing::TestInfo* noted = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (info == noted) return;
  noted = info;
  const std::string line = std::string(info->test_suite_name()) + "." + info->name() + "\n";
  const int fd = ::open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);  // one write: atomic
  if (fd < 0) return;
  [[maybe_unused]] ssize_t written = ::write(fd, line.data(), line.size());
  ::close(fd);
}

}  // namespace

uint64_t case_seed(std::string_view salt) {
  note_seeded_test();
  std::string name;
  if (const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info()) {
    name = std::string(info->test_suite_name()) + "." + info->name();
  }
  name += '\0';
  name.append(salt);
  return XXH3_64bits_withSeed(name.data(), name.size(), test_seed());
}

uint64_t shared_seed(std::string_view name) {
  note_seeded_test();
  return XXH3_64bits_withSeed(name.data(), name.size(), test_seed());
}

std::mt19937 named_rng(std::string_view salt) {
  const uint64_t seed = case_seed(salt);
  std::seed_seq sequence{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  return std::mt19937(sequence);
}

std::mt19937 case_rng() {
  static std::mutex mutex;
  static const ::testing::TestInfo* test = nullptr;
  static int calls = 0;
  std::lock_guard<std::mutex> lock(mutex);
  const ::testing::TestInfo* current = ::testing::UnitTest::GetInstance()->current_test_info();
  if (current != test) test = current, calls = 0;
  // Appended rather than `"#" + std::to_string(...)`: GCC 12 at -O3 warns falsely on that (-Wrestrict,
  // its bug 105651).
  std::string salt = "#";
  salt += std::to_string(calls++);
  return named_rng(salt);
}

std::string replay_hint() {
  std::string hint = "MONOTILE_TEST_SEED=";
  hint += std::to_string(test_seed());
  return hint;
}

}  // namespace monotile::testing
