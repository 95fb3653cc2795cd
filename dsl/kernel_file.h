// A kernel file's entry point: what `monotile compile FILE.cpp` looks for. A kernel file is a .cpp
// built against the installed package; it writes its kernels with the DSL and names the programs
// to compile with MONOTILE_KERNEL, after the functions that build them:
//
//   #include <monotile/dsl/dsl.h>
//   #include <monotile/dsl/kernel_file.h>
//   using namespace monotile::dsl;
//   Program gated_rms_norm(int hidden, float eps) { ... }
//   MONOTILE_KERNEL(gated_rms_norm(7168, 1e-6f));
//   MONOTILE_KERNEL(gated_rms_norm(1536, 1e-6f));      // each distinct program is its own build
//
// The expression is evaluated when the tool asks for it, once per target, with `target` (a
// const dsl::Target&) in scope for kernels whose code depends on it: MONOTILE_KERNEL(k(target)).
// A dsl::Error it throws is reported with the kernel file's line. Nothing here runs when the file
// is linked into an ordinary program (a test of the same kernels): the list is only read.
#pragma once

#include <cstddef>
#include <vector>

#include "dsl/ir.h"
#include "dsl/target.h"

namespace monotile::dsl::kernel_file {

// One MONOTILE_KERNEL line. The layout is the file format's version 1: the tool reads it through
// the C symbol below, so it never changes without a new symbol name.
struct Entry {
  const char* expression;  // the macro's argument, as written
  const char* file;        // the kernel file (as the compiler was given it)
  int line;                // the MONOTILE_KERNEL line
  Program (*make)(const Target& target);
};

// The file's entries, in the order of their lines.
inline std::vector<Entry>& entries() {
  static std::vector<Entry> list;
  return list;
}

inline bool add(Entry entry) {
  entries().push_back(entry);
  return true;
}

}  // namespace monotile::dsl::kernel_file

// What the tool calls after loading the file: the entries and their count.
extern "C"
    __attribute__((visibility("default"), used)) inline const monotile::dsl::kernel_file::Entry*
    monotile_kernel_file_v1(std::size_t* count) {
  *count = monotile::dsl::kernel_file::entries().size();
  return monotile::dsl::kernel_file::entries().data();
}

#define MONOTILE_KERNEL_CONCAT_INNER(a, b) a##b
#define MONOTILE_KERNEL_CONCAT(a, b) MONOTILE_KERNEL_CONCAT_INNER(a, b)
#define MONOTILE_KERNEL(...)                                                                    \
  [[maybe_unused]] static const bool MONOTILE_KERNEL_CONCAT(monotile_kernel_entry_, __LINE__) = \
      ::monotile::dsl::kernel_file::add(                                                        \
          {#__VA_ARGS__, __FILE__, __LINE__,                                                    \
           [](const ::monotile::dsl::Target& target) -> ::monotile::dsl::Program {              \
             static_cast<void>(target);                                                         \
             return __VA_ARGS__;                                                                \
           }})
