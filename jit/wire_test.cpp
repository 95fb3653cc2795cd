// The worker's message encoding round-trips requests, results and errors byte for byte.
#include "jit/wire.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile::jit {
namespace {

TEST(Wire, RequestRoundTrips) {
  CompileRequest request{"k", std::string("a\0b\n 12 x\n", 11), *dsl::Target::parse("gfx90a:xnack-"),
                         {"-DX=1", ""}, {{"h.h", "#define A 1\n"}, {"d/e.h", ""}}, "name", "00ff", true, 1.5};
  absl::StatusOr<CompileRequest> back = decode_request(encode_request(request));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kernel_name, request.kernel_name);
  EXPECT_EQ(back->source, request.source);
  EXPECT_EQ(back->target, request.target);
  EXPECT_EQ(back->options, request.options);
  EXPECT_EQ(back->headers, request.headers);
  EXPECT_EQ(back->build_name, "name");
  EXPECT_TRUE(back->want_assembly);
  EXPECT_EQ(back->test_sleep_seconds, 1.5);
}

TEST(Wire, ResultRoundTrips) {
  CompileResult result;
  result.code_object = std::string("\x7f" "ELF\0\1", 6);
  result.log = "ptxas info";
  result.report.registers = 17;
  result.assembly = ".entry k";
  absl::StatusOr<CompileResult> back = decode_result(encode_result(result));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->code_object, result.code_object);
  EXPECT_EQ(back->log, result.log);
  EXPECT_EQ(back->report, result.report);
  EXPECT_EQ(back->assembly, result.assembly);
}

TEST(Wire, ErrorRoundTripsWithItsCode) {
  absl::StatusOr<CompileResult> back = decode_result(encode_result(absl::InvalidArgumentError("bad\nlog")));
  EXPECT_EQ(back.status(), absl::InvalidArgumentError("bad\nlog"));
}

TEST(Wire, TruncatedMessageIsDataLoss) {
  std::string bytes = encode_result(CompileResult{});
  bytes.resize(bytes.size() - 3);
  EXPECT_EQ(decode_result(bytes).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace monotile::jit
