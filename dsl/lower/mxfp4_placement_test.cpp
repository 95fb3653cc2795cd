// NVIDIA's MXFP4 word decode places each result word's two nibbles as bf16 bits (sign at 15 and 31,
// exponent and mantissa at 6..8 and 22..24: the e2m1 value times 2^-126) with integer operations
// before its bf16x2 multiplies. That part sits behind MT_BF16X2_FMA, which the host emulation never
// compiles, so here it is taken from the generated sm_90a source, compiled for the host and checked
// for both placements (dsl/dot.h Mxfp4Placement) against the float64 value of every nibble pair.
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>

#include "dsl/dsl.h"
#include "dsl/lower/host_emulation_build.h"
#include "dsl/lower/lower_test_util.h"
#include "gtest/gtest.h"

namespace monotile::dsl::lower {
namespace {

// Words decoded through an i32 view of the packed bytes, a code a word.
Program word_pairs(Mxfp4Placement placement) {
  Builder b("word_pairs", {.num_warps = 1});
  auto words = b.arg("words", ptr(i32)), codes = b.arg("codes", ptr(u8)),
       out = b.arg("out", ptr(i32));
  auto js = arange(0, 32);
  store(out + arange(0, 128), mxfp4_word_pairs(load(words + js), load(codes + js), 0, placement));
  return b.finish();
}

// The generated function that places the nibbles, from its signature to its closing brace.
std::string placement_function(const std::string& source) {
  const size_t begin = source.find("__device__ __forceinline__ unsigned mt_mxfp4_word_raw(");
  const size_t end = source.find("\n}\n", begin);
  if (begin == std::string::npos || end == std::string::npos) return "";
  return source.substr(begin, end + 3 - begin);
}

// bf16 bits of e2m1 `nibble` x 2^-126 (exact: at most 2 significant bits, down to 2^-127).
uint32_t expected_bits(uint32_t nibble) {
  static constexpr double kE2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  const double magnitude = kE2m1[nibble & 7u] * std::ldexp(1.0, -126);
  uint32_t bits = 0;
  if (magnitude != 0) {
    int exponent = 0;
    const double fraction = std::frexp(magnitude, &exponent);  // magnitude = fraction x 2^exponent
    // bf16: value = (1 + m / 128) x 2^(e - 127) for e >= 1, m / 128 x 2^-126 for e = 0.
    const int biased = exponent - 1 + 127;
    bits = biased >= 1 ? (static_cast<uint32_t>(biased) << 7) |
                             static_cast<uint32_t>(std::lround((fraction * 2 - 1) * 128))
                       : static_cast<uint32_t>(std::lround(magnitude * std::ldexp(1.0, 126 + 7)));
  }
  return bits | ((nibble & 8u) << 12);
}

using Place = unsigned (*)(unsigned, unsigned, unsigned);

class Mxfp4Placements : public ::testing::TestWithParam<Mxfp4Placement> {};

TEST_P(Mxfp4Placements, EveryNibblePairLandsAsE2m1TimesTwoToTheMinus126) {
  const std::string source = testing::lowered(word_pairs(GetParam()), "sm_90a").source;
  const std::string function = placement_function(source);
  ASSERT_FALSE(function.empty()) << "no mt_mxfp4_word_raw in the sm_90a source";
  const unsigned placement = GetParam() == Mxfp4Placement::kShifts ? 1u : 0u;
  // The call passes the op's placement.
  EXPECT_NE(source.find(placement == 1u ? "& 255u, 0, 1u)" : "& 255u, 0, 0u)"), std::string::npos);
  const std::string host =
      "#define __device__\n#define __forceinline__ inline\n" + function +
      "extern \"C\" unsigned place(unsigned word, unsigned which, unsigned placement) {\n"
      "  return mt_mxfp4_word_raw(word, which, placement);\n}\n";
  const std::filesystem::path stem = std::filesystem::path(::testing::TempDir()) /
                                     ("monotile_mxfp4_placement_" + std::to_string(placement));
  absl::StatusOr<void*> built =
      testing::build_host_emulation(host, "-std=c++20 -O1 -shared -fPIC", stem);
  ASSERT_TRUE(built.ok()) << built.status();
  auto place = reinterpret_cast<Place>(dlsym(*built, "place"));
  ASSERT_NE(place, nullptr);
  // Every pair of the word's nibbles `which` and `which` + 4, the other six random (they must not
  // reach the result).
  std::mt19937 random(std::random_device{}());
  int wrong = 0;
  for (unsigned which = 0; which < 4; ++which) {
    for (uint32_t low = 0; low < 16; ++low) {
      for (uint32_t high = 0; high < 16; ++high) {
        for (int fill = 0; fill < 8; ++fill) {
          const uint32_t others = random() & ~((0xfu << (4 * which)) | (0xfu << (4 * which + 16)));
          const uint32_t word = others | (low << (4 * which)) | (high << (4 * which + 16));
          const uint32_t expected = expected_bits(low) | (expected_bits(high) << 16);
          const uint32_t got = place(word, which, placement);
          if (got != expected && ++wrong <= 5) {
            ADD_FAILURE() << "word " << std::hex << word << " which " << which << ": got " << got
                          << ", expected " << expected;
          }
        }
      }
    }
  }
  EXPECT_EQ(wrong, 0);
  dlclose(*built);
}

INSTANTIATE_TEST_SUITE_P(Both, Mxfp4Placements,
                         ::testing::Values(Mxfp4Placement::kCopies, Mxfp4Placement::kShifts),
                         [](const ::testing::TestParamInfo<Mxfp4Placement>& info) {
                           return info.param == Mxfp4Placement::kCopies ? std::string("Copies")
                                                                        : std::string("Shifts");
                         });

}  // namespace
}  // namespace monotile::dsl::lower
