// The benchmarks' L2 flush: the read kernel sums every word of its block (so its loads cannot be
// dropped) on the interpreter, and the mode names parse.
#include "kernels/k3/l2_flush.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "dsl/interp/interpreter.h"
#include "gtest/gtest.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::k3 {
namespace {

TEST(L2Flush, TheReadSumsEachBlockIntoItsProgramsWord) {
  std::mt19937 rng = monotile::testing::case_rng();
  const int programs = 3;
  std::vector<int32_t> src(static_cast<size_t>(programs * kL2ReadBlock));
  for (int32_t& v : src) v = static_cast<int32_t>(rng() % 2001) - 1000;
  std::vector<int32_t> out(programs);
  std::memset(out.data(), 0xA5, out.size() * 4);
  dsl::interp::InterpretOptions options;
  options.allocations = {{src.data(), src.size() * 4, "src"}, {out.data(), out.size() * 4, "out"}};
  const dsl::Program program = l2_read_program(int64_t{programs} * kL2ReadBlock * 4);
  const std::vector<dsl::interp::ArgValue> args = {dsl::interp::ArgValue::of(src.data()),
                                                   dsl::interp::ArgValue::of(out.data())};
  const absl::Status status = dsl::interp::interpret(program, {programs, 1, 1}, args, options);
  ASSERT_TRUE(status.ok()) << status;
  for (int p = 0; p < programs; ++p) {
    int64_t want = 0;
    for (int64_t i = 0; i < kL2ReadBlock; ++i)
      want += src[static_cast<size_t>(p * kL2ReadBlock + i)];
    EXPECT_EQ(out[static_cast<size_t>(p)], static_cast<int32_t>(want)) << "program " << p;
  }
}

TEST(L2Flush, ModesParseByName) {
  for (L2Flush mode : {L2Flush::kNone, L2Flush::kRead, L2Flush::kWrite}) {
    EXPECT_EQ(parse_l2_flush(l2_flush_name(mode)), mode);
  }
  EXPECT_FALSE(parse_l2_flush("memset").has_value());
  EXPECT_NE(l2_flush_description(L2Flush::kRead).find("clean"), std::string::npos);
  EXPECT_NE(l2_flush_description(L2Flush::kWrite).find("memset"), std::string::npos);
}

}  // namespace
}  // namespace monotile::kernels::k3
