// Compiler logs gain the source lines they point at; hiprtc's temporary paths disappear.
#include "jit/diagnostics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile::jit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::string_view kSource = "line one\nline two\nline three\nline four\nline five\nline six\n";

TEST(AnnotateLog, NvrtcStyleShowsTheLineWithContext) {
  std::string text = annotate_log("k.cu(4): error: identifier \"x\" is undefined\n", kSource, "k.cu");
  EXPECT_THAT(text, HasSubstr("source lines the log points at (k.cu):"));
  EXPECT_THAT(text, HasSubstr(">     4 | line four"));
  EXPECT_THAT(text, HasSubstr("      2 | line two"));
  EXPECT_THAT(text, HasSubstr("      6 | line six"));
  EXPECT_THAT(text, Not(HasSubstr("line one")));
}

TEST(AnnotateLog, HiprtcTemporaryPathBecomesTheSourceName) {
  std::string text = annotate_log(
      "/tmp/monotile-jit-Ab12/comgr-98ec65/input/CompileSource:2:7: error: use of undeclared identifier\n",
      kSource, "k.hip");
  EXPECT_THAT(text, HasSubstr("k.hip:2:7: error"));
  EXPECT_THAT(text, Not(HasSubstr("comgr-")));
  EXPECT_THAT(text, HasSubstr(">     2 | line two"));
}

TEST(AnnotateLog, NamesTheUsersLineEachGeneratedLineCameFrom) {
  std::vector<dsl::lower::SourceOrigin> origins(2);
  origins[0].generated_line = 2, origins[0].loc.file = "/home/a/attn.cpp", origins[0].loc.line = 40;
  origins[1].generated_line = 4, origins[1].loc.file = "/home/a/attn.cpp", origins[1].loc.line = 41;
  std::string text = annotate_log("k.cu(5): error: bad\nk.cu(3): error: worse\n", kSource, "k.cu", origins);
  EXPECT_THAT(text, HasSubstr("line 5 is from attn.cpp:41:"));
  EXPECT_THAT(text, HasSubstr("line 3 is from attn.cpp:40:"));
  EXPECT_THAT(annotate_log("k.cu(1): error: x\n", kSource, "k.cu", origins), Not(HasSubstr("is from")));
}

TEST(AnnotateLog, LogWithoutLocationsIsUnchanged) {
  EXPECT_EQ(annotate_log("LLVM ERROR: Cannot select", kSource, "k.hip"), "LLVM ERROR: Cannot select");
}

}  // namespace
}  // namespace monotile::jit
