// A missing library or symbol is a Status naming it and dlerror()'s reason.
#include "support/shared_library.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile {
namespace {

using ::testing::HasSubstr;

TEST(SharedLibrary, MissingLibraryListsEveryNameTried) {
  absl::StatusOr<SharedLibrary> library =
      SharedLibrary::open({"libmonotile_bogus_a.so.1", "libmonotile_bogus_b.so"});
  ASSERT_FALSE(library.ok());
  EXPECT_EQ(library.status().code(), absl::StatusCode::kNotFound);
  const std::string message(library.status().message());
  EXPECT_THAT(message, HasSubstr("dlopen(\"libmonotile_bogus_a.so.1\") failed: "
                                 "libmonotile_bogus_a.so.1: cannot open shared object file"));
  EXPECT_THAT(message, HasSubstr("; dlopen(\"libmonotile_bogus_b.so\") failed: "));
}

TEST(SharedLibrary, FirstLoadableNameWins) {
  absl::StatusOr<SharedLibrary> library = SharedLibrary::open({"libmonotile_bogus.so", "libc.so.6"});
  ASSERT_TRUE(library.ok()) << library.status();
  EXPECT_EQ(library->name(), "libc.so.6");
  size_t (*length)(const char*) = nullptr;
  ASSERT_TRUE(library->bind("strlen", length).ok());
  EXPECT_EQ(length("four"), 4u);
}

TEST(SharedLibrary, MissingSymbolNamesSymbolAndLibrary) {
  absl::StatusOr<SharedLibrary> library = SharedLibrary::open({"libc.so.6"});
  ASSERT_TRUE(library.ok()) << library.status();
  absl::StatusOr<void*> symbol = library->symbol("monotile_no_such_symbol");
  ASSERT_FALSE(symbol.ok());
  EXPECT_THAT(std::string(symbol.status().message()),
              HasSubstr("symbol \"monotile_no_such_symbol\" not found in " + library->path() + ": "));
}

TEST(SharedLibrary, PathIsTheResolvedFile) {
  absl::StatusOr<SharedLibrary> library = SharedLibrary::open({"libc.so.6"});
  ASSERT_TRUE(library.ok()) << library.status();
  EXPECT_TRUE(library->path().starts_with("/")) << library->path();
  EXPECT_NE(library->path().find("libc"), std::string::npos) << library->path();
}

}  // namespace
}  // namespace monotile
