// Remembered compiler facts: they come back while the compiler's files are unchanged and are
// forgotten once one changes (a replaced compiler must miss); target verdicts keep their words.
#include "jit/compiler_facts.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/test_support.h"

namespace monotile::jit {
namespace {

using ::testing::HasSubstr;

dsl::Target target(const char* text) { return *dsl::Target::parse(text); }

class CompilerFactsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    library_ = dir_.path() / "libfake.so";
    std::ofstream(library_) << "version 1";
    cache::Config config;
    config.writable_dir = dir_.path() / "cache";
    cache_ = cache::Cache::open(config);
  }

  testing::TempDir dir_;
  std::filesystem::path library_;
  std::unique_ptr<cache::Cache> cache_;
};

TEST_F(CompilerFactsTest, AreRecalledWhileTheCompilersFilesAreUnchanged) {
  EXPECT_FALSE(recall_compiler_facts(*cache_, target("sm_90a")).has_value());
  remember_compiler_facts(*cache_, target("sm_90a"), {"nvrtc 13.0", "nvrtc 13.0 (libfake.so 9 bytes)", {library_}});
  std::optional<CompilerFacts> facts = recall_compiler_facts(*cache_, target("sm_90a"));
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(facts->identity, "nvrtc 13.0");
  EXPECT_EQ(facts->key_identity, "nvrtc 13.0 (libfake.so 9 bytes)");
  EXPECT_EQ(facts->files, std::vector<std::string>{library_.string()});
  // Facts are per vendor: another NVIDIA target shares them, an AMD one does not.
  EXPECT_TRUE(recall_compiler_facts(*cache_, target("sm_80")).has_value());
  EXPECT_FALSE(recall_compiler_facts(*cache_, target("gfx90a")).has_value());
}

TEST_F(CompilerFactsTest, AreForgottenWhenALibraryIsReplacedInPlace) {
  remember_compiler_facts(*cache_, target("sm_90a"), {"nvrtc 13.0", "nvrtc 13.0 (x)", {library_}});
  std::filesystem::remove(library_);
  std::ofstream(library_) << "version 2, longer";
  EXPECT_FALSE(recall_compiler_facts(*cache_, target("sm_90a")).has_value());
}

TEST_F(CompilerFactsTest, AreForgottenWhenTheLibrarySearchPathChanges) {
  remember_compiler_facts(*cache_, target("sm_90a"), {"nvrtc 13.0", "nvrtc 13.0 (x)", {library_}});
  const char* before = std::getenv("LD_LIBRARY_PATH");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("LD_LIBRARY_PATH", (dir_.path().string() + ":" + saved).c_str(), 1);
  const bool recalled = recall_compiler_facts(*cache_, target("sm_90a")).has_value();
  if (before != nullptr) ::setenv("LD_LIBRARY_PATH", saved.c_str(), 1);
  else ::unsetenv("LD_LIBRARY_PATH");
  EXPECT_FALSE(recalled);
}

TEST_F(CompilerFactsTest, TargetVerdictsKeepTheirWordsPerCompilerAndTarget) {
  EXPECT_FALSE(recall_target_verdict(*cache_, "hiprtc 5.7", target("gfx950")).has_value());
  remember_target_verdict(*cache_, "hiprtc 5.7", target("gfx942"), absl::OkStatus());
  remember_target_verdict(*cache_, "hiprtc 5.7", target("gfx950"),
                          absl::FailedPreconditionError("gfx950 needs ROCm 6.4 or newer"));
  std::optional<absl::Status> ok = recall_target_verdict(*cache_, "hiprtc 5.7", target("gfx942"));
  ASSERT_TRUE(ok.has_value());
  EXPECT_TRUE(ok->ok());
  std::optional<absl::Status> refused = recall_target_verdict(*cache_, "hiprtc 5.7", target("gfx950"));
  ASSERT_TRUE(refused.has_value());
  EXPECT_TRUE(absl::IsFailedPrecondition(*refused));
  EXPECT_THAT(std::string(refused->message()), HasSubstr("gfx950 needs ROCm 6.4 or newer"));
  EXPECT_FALSE(recall_target_verdict(*cache_, "hiprtc 6.2", target("gfx950")).has_value());
}

TEST_F(CompilerFactsTest, OnlyVerdictsAboutTheTargetAreRemembered) {
  remember_target_verdict(*cache_, "nvrtc 13.0", target("sm_90a"), absl::UnavailableError("worker timed out"));
  EXPECT_FALSE(recall_target_verdict(*cache_, "nvrtc 13.0", target("sm_90a")).has_value());
}

}  // namespace
}  // namespace monotile::jit
