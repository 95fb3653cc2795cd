// dsl::Error: a misuse of the DSL found while a program is built, pointing at the user's line.
// Its message reads "<op> at <file>:<line>: <what>; hint: <hint>" (the hint part only when known).
#pragma once

#include <exception>
#include <string>

#include "dsl/ir.h"

namespace monotile::dsl {

class Error : public std::exception {
 public:
  // `what` says what is wrong and quotes expected and actual ("mask shape [8] does not match
  // pointer shape [7168]"); `expected` / `actual` repeat them for programs that inspect errors.
  Error(SourceLoc loc, std::string op, std::string what, std::string expected = {},
        std::string actual = {}, std::string hint = {});

  const char* what() const noexcept override { return message_.c_str(); }
  const SourceLoc& loc() const { return loc_; }
  const std::string& op() const { return op_; }
  const std::string& summary() const { return summary_; }
  const std::string& expected() const { return expected_; }
  const std::string& actual() const { return actual_; }
  const std::string& hint() const { return hint_; }

 private:
  SourceLoc loc_;
  std::string op_;
  std::string summary_;
  std::string expected_;
  std::string actual_;
  std::string hint_;
  std::string message_;
};

}  // namespace monotile::dsl
