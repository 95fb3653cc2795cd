// Test helper: EXPECT_DSL_ERROR(statement, words) checks that `statement` (written on one line)
// throws dsl::Error whose message contains `words` and points at this test file's line.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "dsl/error.h"

#define EXPECT_DSL_ERROR(statement, words)                                                   \
  do {                                                                                       \
    const std::string file_ = __FILE__;                                                      \
    const std::string where_ =                                                               \
        file_.substr(file_.find_last_of('/') + 1) + ":" + std::to_string(__LINE__);          \
    try {                                                                                    \
      statement;                                                                             \
      ADD_FAILURE() << "no dsl::Error from: " #statement;                                    \
    } catch (const ::monotile::dsl::Error& error_) {                                         \
      EXPECT_THAT(std::string(error_.what()), ::testing::HasSubstr(words));                  \
      EXPECT_THAT(std::string(error_.what()), ::testing::HasSubstr(" at " + where_ + ": "))  \
          << "the message must point at the test's own line";                               \
      EXPECT_THAT(std::string(error_.what()), ::testing::HasSubstr("; hint: "));             \
    }                                                                                        \
  } while (0)
